"""The synthetic language pair: lexicon, reordering, alignments."""

import numpy as np
import pytest

from attention_zoo_apps.translation.synthetic import ADJECTIVES
from attention_zoo_apps.translation.synthetic import LEXICON
from attention_zoo_apps.translation.synthetic import NOUNS
from attention_zoo_apps.translation.synthetic import VERBS
from attention_zoo_apps.translation.synthetic import alignment_matrix
from attention_zoo_apps.translation.synthetic import fit_arguments
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs


def _independent_translation(source):
    """The SVO -> SOV rule, written again: adjectives after nouns."""
    words = source.split()
    verb = next(i for i, w in enumerate(words) if w in VERBS)

    def phrase(part, offset):
        nouns = [offset + i for i, w in enumerate(part) if w in NOUNS]
        adjectives = [offset + i for i, w in enumerate(part) if w in ADJECTIVES]
        assert len(nouns) == 1 and len(adjectives) <= 1
        assert all(a < nouns[0] for a in adjectives)  # source: adj noun
        return nouns + adjectives

    order = (
        phrase(words[:verb], 0) + phrase(words[verb + 1 :], verb + 1) + [verb]
    )
    return [LEXICON[words[i]] for i in order], order


def test_synthetic_pairs_follow_the_lexicon_and_reordering():
    synthetic = make_synthetic_pairs(300, seed=3)
    assert len(synthetic.pairs) == len(synthetic.alignments) == 300
    lengths = set()
    for (source, target), alignment in zip(
        synthetic.pairs, synthetic.alignments
    ):
        expected, order = _independent_translation(source)
        assert target.split() == expected
        assert alignment == order
        # Each target word aligns to exactly one source word, one-to-one.
        assert sorted(alignment) == list(range(len(source.split())))
        lengths.add(len(source.split()))
    assert lengths == {3, 4, 5}
    # The lexicon is a bijection.
    assert len(set(LEXICON.values())) == len(LEXICON)


def test_synthetic_pairs_are_deterministic():
    a = make_synthetic_pairs(50, seed=7)
    assert a == make_synthetic_pairs(50, seed=7)
    assert a.pairs != make_synthetic_pairs(50, seed=8).pairs
    none = make_synthetic_pairs(20, adjective_probability=0.0)
    assert all(len(s.split()) == 3 for s, _ in none.pairs)
    with pytest.raises(ValueError, match="num_pairs"):
        make_synthetic_pairs(-1)
    with pytest.raises(ValueError, match="adjective_probability"):
        make_synthetic_pairs(5, adjective_probability=2.0)


def test_synthetic_words_are_single_tokens(tokenized_pairs):
    pairs, (source_tokenizer, target_tokenizer) = tokenized_pairs
    for tokenizer, words in (
        (source_tokenizer, list(LEXICON)),
        (target_tokenizer, list(LEXICON.values())),
    ):
        ids = tokenizer.tokenize(words).numpy()
        assert all(len(row) == 1 for row in ids), words
        assert [tokenizer.id_to_token(row[0]) for row in ids] == words


def test_alignment_matrix_maps_words_to_token_positions(tokenized_pairs):
    pairs, (source_tokenizer, target_tokenizer) = tokenized_pairs
    source, target = pairs.pairs[0]
    alignment = pairs.alignments[0]
    source_ids = source_tokenizer.tokenize([source]).numpy()[0]
    target_ids = target_tokenizer.tokenize([target]).numpy()[0]
    matrix = alignment_matrix(alignment, len(source_ids))
    assert matrix.shape == (len(target_ids), len(source_ids))
    np.testing.assert_array_equal(matrix.sum(1), 1.0)
    lexicon_ids = {
        source_tokenizer.token_to_id(s): target_tokenizer.token_to_id(t)
        for s, t in LEXICON.items()
    }
    for j, i in zip(*np.nonzero(matrix)):
        assert lexicon_ids[source_ids[i]] == target_ids[j]
    shifted = alignment_matrix(
        alignment, len(source_ids) + 1, len(target_ids) + 1, source_offset=1
    )
    np.testing.assert_array_equal(shifted[:-1, 1:], matrix)
    np.testing.assert_array_equal(shifted[-1], 0.0)


def test_fit_arguments_are_the_generated_pairs():
    (pairs,) = fit_arguments(12, seed=4)
    assert pairs == make_synthetic_pairs(12, seed=4).pairs
    assert fit_arguments(12) == (make_synthetic_pairs(12).pairs,)
