"""PPMI + SVD word vectors against a loop-by-loop reference."""

import collections

import numpy as np
import pytest

from attention_zoo_apps.common.ppmi_vectors import save_word_vectors
from attention_zoo_apps.common.ppmi_vectors import train_ppmi_vectors
from attention_zoo_apps.common.word_vectors import load_word_vectors

CORPUS = [
    "the cat eats fish",
    "the dog eats meat",
    "a cat drinks milk",
    "a dog drinks water",
    "the bird eats seeds",
    "a bird drinks water",
    "the cat sleeps",
    "the dog sleeps",
] * 3


def reference_ppmi(sentences, vocabulary, window):
    index = {w: i for i, w in enumerate(vocabulary)}
    counts = collections.defaultdict(float)
    for sentence in sentences:
        words = sentence.split()
        for i, a in enumerate(words):
            for j, b in enumerate(words):
                d = abs(i - j)
                if 0 < d <= window and a in index and b in index:
                    counts[index[a], index[b]] += 1.0 / d
    size = len(vocabulary)
    cooc = np.zeros((size, size))
    for (a, b), value in counts.items():
        cooc[a, b] = value
    total = cooc.sum()
    p_word = cooc.sum(1) / total
    p_context = cooc.sum(0) ** 0.75
    p_context /= p_context.sum()
    with np.errstate(divide="ignore"):
        pmi = np.log(cooc / total / p_word[:, None] / p_context[None, :])
    return np.where(cooc > 0, np.maximum(pmi, 0.0), 0.0)


def test_singular_values_match_the_reference():
    words, matrix = train_ppmi_vectors(CORPUS, dim=5, window=2, min_count=3)
    assert matrix.shape == (len(words), 5) and matrix.dtype == np.float32
    ppmi = reference_ppmi(CORPUS, words, window=2)
    expected = np.linalg.svd(ppmi, compute_uv=False)[:5]
    # Rows are U_d S_d^(1/2): their singular values are sqrt(s).
    actual = np.linalg.svd(matrix, compute_uv=False) ** 2
    np.testing.assert_allclose(actual, expected, rtol=1e-4)


def test_words_in_the_same_contexts_are_close():
    words, matrix = train_ppmi_vectors(CORPUS, dim=6, window=2, min_count=3)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    def similarity(a, b):
        return float(unit[words.index(a)] @ unit[words.index(b)])

    # cat and dog share every context (the, a, eats, drinks, sleeps).
    assert similarity("cat", "dog") > similarity("cat", "drinks")
    assert similarity("cat", "dog") > similarity("cat", "fish")


def test_saved_vectors_load_for_a_vocabulary(tmp_path):
    words, matrix = train_ppmi_vectors(CORPUS, dim=4, window=2, min_count=3)
    path = save_word_vectors(str(tmp_path / "v.txt"), words, matrix)
    vocabulary = ["[PAD]", "cat", "unseen"]
    loaded, found = load_word_vectors(path, vocabulary)
    assert found.tolist() == [False, True, False]
    np.testing.assert_allclose(loaded[1], matrix[words.index("cat")], atol=1e-4)


def test_too_little_text_is_an_error():
    with pytest.raises(ValueError, match="too few"):
        train_ppmi_vectors(["a b c"] * 5, dim=10, min_count=1)
