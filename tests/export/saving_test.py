"""`save_export`, `next_version`, `resolve_version`: a version folder appears
whole with the bundle's files and `metadata.json`, or not at all; the newest
numbered version is the one served."""

import hashlib
import os

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import load_signature
from attention_zoo.export import next_version
from attention_zoo.export import read_metadata
from attention_zoo.export import resolve_version
from attention_zoo.export import save_export
from tests.support.toy_bundle import ToyBundle


class _Adding(tf.Module):
    def __init__(self, amount):
        super().__init__()
        self.amount = tf.Variable(amount)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def serve(self, x):
        return {"y": x + self.amount}


def _served(path):
    return load_signature(str(path))(x=tf.constant([0.0]))["y"].numpy()


def test_a_version_holds_the_model_the_bundle_files_and_metadata(tmp_path):
    path = save_export(
        ToyBundle(),
        _Adding(1.0),
        str(tmp_path / "3"),
        jit_compile=False,
        metrics={"accuracy": np.float32(0.25)},
        data_fingerprint="abc",
    )
    assert path == str(tmp_path / "3")
    assert os.listdir(tmp_path) == ["3"]  # no temporary folder left
    assert {
        "saved_model.pb",
        "variables",
        "config.json",
        "vocabulary.txt",
        "metadata.json",
    } <= set(os.listdir(path))
    metadata = read_metadata(path)
    assert metadata["application"] == "toy" and metadata["version"] == 3
    assert metadata["config"] == {"units": 4}
    assert metadata["jit_compile"] is False
    assert metadata["input_limits"] == {"x": 8}
    assert metadata["metrics"] == {"accuracy": 0.25}
    assert metadata["data_fingerprint"] == "abc"
    digest = hashlib.sha256(b"[PAD]\n[UNK]\n").hexdigest()
    assert metadata["vocabularies"] == {"vocabulary.txt": digest}
    np.testing.assert_allclose(_served(path), [1.0])
    unnumbered = save_export(
        ToyBundle(), _Adding(1.0), str(tmp_path / "x"), True
    )
    assert read_metadata(unnumbered)["version"] is None


def test_a_failed_export_leaves_the_folder_as_it_was(tmp_path):
    with pytest.raises(RuntimeError, match="disk full"):
        save_export(
            ToyBundle(fail=True), _Adding(1.0), str(tmp_path / "1"), False
        )
    assert os.listdir(tmp_path) == []  # no version, no temporary folder
    save_export(ToyBundle(), _Adding(1.0), str(tmp_path / "1"), False)
    assert os.listdir(tmp_path) == ["1"]
    np.testing.assert_allclose(_served(tmp_path / "1"), [1.0])


def test_an_existing_version_is_never_replaced(tmp_path):
    save_export(ToyBundle(), _Adding(1.0), str(tmp_path / "1"), False)
    (tmp_path / "2").mkdir()  # even an empty folder is a taken number
    for version in ("1", "2"):
        with pytest.raises(FileExistsError, match="never replaced"):
            save_export(
                ToyBundle(), _Adding(2.0), str(tmp_path / version), False
            )
    assert sorted(os.listdir(tmp_path)) == ["1", "2"]  # no temporary left
    assert os.listdir(tmp_path / "2") == []
    np.testing.assert_allclose(_served(tmp_path / "1"), [1.0])


def test_the_newest_numbered_version_is_served(tmp_path):
    assert next_version(str(tmp_path / "missing")) == 1
    for version in (2, 9, 10):
        save_export(
            ToyBundle(),
            _Adding(float(version)),
            str(tmp_path / str(version)),
            False,
        )
    (tmp_path / "11-draft").mkdir()
    assert next_version(str(tmp_path)) == 11
    assert resolve_version(str(tmp_path)) == str(tmp_path / "10")
    assert resolve_version(str(tmp_path / "9")) == str(tmp_path / "9")
    np.testing.assert_allclose(_served(tmp_path), [10.0])
    np.testing.assert_allclose(_served(tmp_path / "2"), [2.0])


def test_a_folder_without_a_saved_model_is_a_clear_error(tmp_path):
    (tmp_path / "latest").mkdir()
    for directory in (tmp_path, tmp_path / "absent"):
        with pytest.raises(FileNotFoundError, match="No SavedModel in"):
            resolve_version(str(directory))


def test_a_version_folder_gets_the_umasks_permissions(tmp_path):
    from attention_zoo.export import atomic_directory

    previous = os.umask(0o022)
    try:
        with atomic_directory(str(tmp_path / "1")) as temporary:
            with open(os.path.join(temporary, "file"), "w") as f:
                f.write("x")
    finally:
        os.umask(previous)
    # Not mkdtemp's private 0700: a server of another user can read it.
    assert os.stat(tmp_path / "1").st_mode & 0o777 == 0o755
