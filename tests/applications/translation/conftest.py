"""Fixtures of the translation tests."""

import pytest

from applications.common.wordpiece import SubwordTokenizer
from applications.translation.synthetic import make_synthetic_pairs


@pytest.fixture(scope="session")
def tokenized_pairs():
    """2,000 synthetic pairs and the source and target tokenizers learned
    from them: `(pairs, (source_tokenizer, target_tokenizer))`."""
    pairs = make_synthetic_pairs(2000, seed=0)
    source = SubwordTokenizer.train([s for s, _ in pairs.pairs], 400)
    target = SubwordTokenizer.train([t for _, t in pairs.pairs], 400)
    return pairs, (source, target)
