"""Fixtures of the translation tests."""

import keras
import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs


@pytest.fixture(scope="session")
def tokenized_pairs():
    """2,000 synthetic pairs and the source and target tokenizers learned
    from them: `(pairs, (source_tokenizer, target_tokenizer))`."""
    pairs = make_synthetic_pairs(2000, seed=0)
    source = SubwordTokenizer.train([s for s, _ in pairs.pairs], 400)
    target = SubwordTokenizer.train([t for _, t in pairs.pairs], 400)
    return pairs, (source, target)


@pytest.fixture(scope="session")
def synthetic():
    """300 synthetic pairs: the tiny translators train on the first 256
    and validate on the other 44."""
    return make_synthetic_pairs(300, seed=0)


def _train_tiny_rnn(folder):
    from attention_zoo_apps.translation.translator import Translator

    keras.utils.set_random_seed(0)
    pairs = make_synthetic_pairs(300, seed=0).pairs
    translator = Translator(registry.get("translation").tiny_config())
    translator.fit(pairs[:256], pairs[256:], verbose=0)
    translator.save(folder / "bundle")
    translator.export(str(folder / "translation" / "1"))


@pytest.fixture(scope="session")
def tiny_rnn(shared):
    """The folder of the tiny RNN translator (the application's tiny
    config, one epoch on `synthetic`), trained once per test session for
    every worker: `bundle/` (`Translator.load` it: each test file takes
    its own object, with its own compiled searches) and its plain export
    `translation/1`. Read-only."""
    return shared("translation-tiny-rnn", _train_tiny_rnn)
