"""`_top_words`: WordPiece pieces glued into words, and a word that occurs
several times in the note listed once with its weights summed."""

import pytest

from attention_zoo_apps.ehr.risk_model import _top_words


def test_repeated_words_are_merged_with_their_weights_summed():
    pieces = ["patient", "hypo", "##tensive", "patient", "stable", "patient"]
    weights = [0.1, 0.2, 0.1, 0.15, 0.05, 0.4]
    top = _top_words(pieces, weights, top_k=3)
    assert [word for word, _ in top] == ["patient", "hypotensive", "stable"]
    assert [weight for _, weight in top] == pytest.approx([0.65, 0.3, 0.05])


def test_a_repeated_word_counts_once_against_top_k():
    pieces = ["a", "b", "a", "c", "a"]
    top = _top_words(pieces, [0.3, 0.25, 0.3, 0.1, 0.05], top_k=2)
    assert top == [("a", pytest.approx(0.65)), ("b", 0.25)]


def test_ties_keep_the_order_of_first_occurrence():
    top = _top_words(["b", "a", "b", "a"], [0.25] * 4, top_k=5)
    assert [word for word, _ in top] == ["b", "a"]
    assert _top_words([], [], top_k=3) == []
