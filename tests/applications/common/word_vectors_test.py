"""Word vectors: GloVe and word2vec text files into an embedding matrix."""

import gzip
import re

import keras
import numpy as np
import pytest

from attention_zoo_apps.common.word_vectors import coverage_report
from attention_zoo_apps.common.word_vectors import load_word_vectors

# word -> vector; "at home" and ". . ." are words with spaces (GloVe 840B).
VECTORS = {
    "the": [0.5, -0.25, 1.0],
    "cat": [1.0, 2.0, -3.0],
    "dog": [-1.5, 0.0, 0.125],
    "at home": [0.25, 0.5, 0.75],
    ". . .": [3.0, -2.0, 1.0],
    "Dog": [9.0, 9.0, 9.0],
}


def _lines(vectors):
    return [f"{w} " + " ".join(str(v) for v in vec) for w, vec in vectors]


def _write(path, lines, compress=False):
    raw = "".join(line + "\n" for line in lines).encode("utf-8")
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def _glove(tmp_path, name="glove.txt", vectors=VECTORS, compress=False):
    return _write(tmp_path / name, _lines(vectors.items()), compress)


def _word2vec(tmp_path, name="vectors.txt", vectors=VECTORS, compress=False):
    header = f"{len(vectors)} {len(next(iter(vectors.values())))}"
    # The word2vec C tool ends each line with a space.
    lines = [line + " " for line in _lines(vectors.items())]
    return _write(tmp_path / name, [header] + lines, compress)


def _at(path, line):
    return "^" + re.escape(f"{path}:{line}: ")


VOCABULARY = ["[PAD]", "cat", "at home", "missing", "dog", ". . .", "the"]


@pytest.mark.parametrize("write", [_glove, _word2vec])
@pytest.mark.parametrize("compress", [False, True])
def test_rows_follow_the_vocabulary(tmp_path, write, compress):
    name = "v.txt.gz" if compress else "v.txt"
    path = write(tmp_path, name, compress=compress)
    matrix, found = load_word_vectors(path, VOCABULARY)
    assert matrix.dtype == np.float32 and matrix.shape == (7, 3)
    assert found.dtype == bool
    assert found.tolist() == [False, True, True, False, True, True, True]
    for row, token in enumerate(VOCABULARY):
        if found[row]:
            np.testing.assert_array_equal(matrix[row], VECTORS[token])
    np.testing.assert_array_equal(matrix[0], 0.0)  # [PAD]
    assert np.all(matrix[3] != 0.0)  # random, not zero


def test_glove_and_word2vec_give_the_same_matrix(tmp_path):
    glove = load_word_vectors(_glove(tmp_path), VOCABULARY, seed=3)
    word2vec = load_word_vectors(_word2vec(tmp_path), VOCABULARY, seed=3)
    np.testing.assert_array_equal(glove[0], word2vec[0])
    np.testing.assert_array_equal(glove[1], word2vec[1])


def test_missing_words_are_seeded_normal_with_the_found_std(tmp_path):
    rng = np.random.default_rng(0)
    vectors = {f"w{i}": rng.normal(0, 0.4, 16).round(4) for i in range(300)}
    path = _glove(tmp_path, vectors=vectors)
    found_std = np.std(list(vectors.values()))
    vocabulary = ["[PAD]"] + list(vectors)[:100] + [f"x{i}" for i in range(500)]
    matrix, found = load_word_vectors(path, vocabulary, seed=7)
    assert found.sum() == 100
    random_rows = matrix[~found][1:]  # [PAD] is zero
    assert random_rows.shape == (500, 16)
    assert abs(random_rows.std() / found_std - 1) < 0.05
    assert abs(random_rows.mean()) < 0.02
    # Seeded: the same seed gives the same rows, another seed others.
    again, _ = load_word_vectors(path, vocabulary, seed=7)
    np.testing.assert_array_equal(again, matrix)
    other, _ = load_word_vectors(path, vocabulary, seed=8)
    assert not np.allclose(other[~found][1:], random_rows)
    # `scale` sets the std instead.
    scaled, _ = load_word_vectors(path, vocabulary, seed=7, scale=2.0)
    assert abs(scaled[~found][1:].std() / 2.0 - 1) < 0.05
    # A token's random row does not depend on which others were found.
    fewer = _glove(tmp_path, "fewer.txt", dict(list(vectors.items())[:50]))
    a, _ = load_word_vectors(path, vocabulary, scale=1.0)
    b, found_b = load_word_vectors(fewer, vocabulary, scale=1.0)
    assert found_b.sum() == 50
    np.testing.assert_array_equal(a[~found], b[~found])


def test_reserved_rows_are_zero(tmp_path):
    path = _glove(tmp_path, vectors={**VECTORS, "[PAD]": [1.0, 1.0, 1.0]})
    matrix, found = load_word_vectors(path, ["[PAD]", "cat", "[UNK]"])
    np.testing.assert_array_equal(matrix[0], 0.0)
    assert not found[0] and np.all(matrix[2] != 0.0)
    matrix, found = load_word_vectors(
        path, ["[PAD]", "cat", "[UNK]"], reserved=("[PAD]", "[UNK]")
    )
    np.testing.assert_array_equal(matrix[[0, 2]], 0.0)
    matrix, found = load_word_vectors(path, ["[PAD]", "cat"], reserved=())
    np.testing.assert_array_equal(matrix[0], 1.0)
    assert found.all()


def test_lowercase_takes_the_first_matching_line(tmp_path):
    path = _glove(tmp_path)
    matrix, found = load_word_vectors(path, ["DOG", "Dog", "cat"])
    assert found.tolist() == [False, True, True]
    np.testing.assert_array_equal(matrix[1], VECTORS["Dog"])
    matrix, found = load_word_vectors(
        path, ["DOG", "Dog", "cat"], lowercase=True
    )
    assert found.all()
    # "dog" comes before "Dog" in the file.
    np.testing.assert_array_equal(matrix[:2], [VECTORS["dog"]] * 2)


def test_max_lines_stops_early(tmp_path):
    path = _glove(tmp_path)
    _, found = load_word_vectors(path, ["the", "cat", "dog"], max_lines=2)
    assert found.tolist() == [True, True, False]


def test_matrix_initialises_a_keras_embedding(tmp_path):
    matrix, _ = load_word_vectors(_glove(tmp_path), VOCABULARY)
    embedding = keras.layers.Embedding(
        len(VOCABULARY),
        matrix.shape[1],
        embeddings_initializer=keras.initializers.Constant(matrix),
        mask_zero=True,
    )
    ids = np.array([[1, 6, 0]])
    vectors = keras.ops.convert_to_numpy(embedding(ids))
    np.testing.assert_array_equal(vectors[0], matrix[[1, 6, 0]])
    weights = keras.ops.convert_to_numpy(embedding.embeddings)
    np.testing.assert_array_equal(weights, matrix)


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("cat 1.0 2.0", "expected a word and 3 values, found 2"),
        (
            "cat 1.0 2.0 3.0 4.0",
            "expected a word and 3 values, found 4",
        ),  # not a word with spaces
        ("cat 1.0 x 3.0", r"word 'cat': not a number"),
        ("cat 1.0 nan, 3.0", r"word 'cat': not a number"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, bad_line, message):
    lines = ["the 0.5 -0.25 1.0", "dog 1 2 3", bad_line, "fox 1 2 3"]
    path = _write(tmp_path / "bad.txt", lines)
    with pytest.raises(ValueError, match=_at(path, 3) + message):
        load_word_vectors(path, ["cat", "dog"])


def test_dimension_must_match_embedding_dim(tmp_path):
    glove = _glove(tmp_path)
    assert load_word_vectors(glove, ["cat"], embedding_dim=3)[0].shape == (1, 3)
    with pytest.raises(ValueError, match=_at(glove, 1) + ".*3 values.*=300"):
        load_word_vectors(glove, ["cat"], embedding_dim=300)
    word2vec = _word2vec(tmp_path)
    with pytest.raises(
        ValueError, match=_at(word2vec, 1) + ".*embedding_dim=4"
    ):
        load_word_vectors(word2vec, ["cat"], embedding_dim=4)
    # A line of a word2vec file whose length disagrees with the header.
    lines = ["2 4", "cat 1 2 3 4", "dog 1 2 3"]
    path = _write(tmp_path / "short.txt", lines)
    with pytest.raises(ValueError, match=_at(path, 3) + ".*4 values, found 3"):
        load_word_vectors(path, ["cat"])


def test_file_level_errors(tmp_path):
    header = _write(tmp_path / "count.txt", ["3 2", "a 1 2", "b 3 4"])
    with pytest.raises(ValueError, match=_at(header, 1) + ".*says 3.*has 2"):
        load_word_vectors(header, ["a"])
    empty = _write(tmp_path / "empty.txt", [])
    with pytest.raises(ValueError, match="empty"):
        load_word_vectors(empty, ["a"])
    with pytest.raises(ValueError, match="None of the 2 .*lowercase=True"):
        load_word_vectors(_glove(tmp_path), ["CAT", "x"])
    matrix, found = load_word_vectors(_glove(tmp_path), ["CAT"], scale=0.1)
    assert not found.any() and matrix.shape == (1, 3)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"the 1 2\ncaf\xe9 3 4\n")
    with pytest.raises(ValueError, match=_at(latin, 2) + "cannot decode"):
        load_word_vectors(latin, ["the"])
    assert load_word_vectors(latin, ["café"], encoding="latin-1")[1].all()
    for name, value in [("embedding_dim", 0), ("max_lines", -1)]:
        with pytest.raises(ValueError, match=f"{name}={value}"):
            load_word_vectors(header, ["a"], **{name: value})
    with pytest.raises(ValueError, match="scale=0"):
        load_word_vectors(header, ["a"], scale=0)
    with pytest.raises(ValueError, match=re.escape("vocabulary[1]=3")):
        load_word_vectors(header, ["a", 3])


def test_coverage_report():
    vocabulary = ["[PAD]"] + [f"w{i}" for i in range(7999)] + ["qué"]
    found = np.ones(len(vocabulary), bool)
    found[[0, 5, 6, 8000]] = False
    assert coverage_report(found, vocabulary) == (
        "7,997 of 8,000 tokens (100.0%) found; missing: 'w4', 'w5', 'qué'"
    )
    found[1:200] = False
    report = coverage_report(found, vocabulary, examples=2)
    assert report == (
        "7,800 of 8,000 tokens (97.5%) found; missing: 'w0', 'w1', ..."
    )
    with pytest.raises(ValueError, match="one entry per vocabulary token"):
        coverage_report(found[:3], vocabulary)
