"""`ServingModule`: an export's module only writes its signatures; the base
saves them under their keys, tracks its state and assets, and refuses a
signature that is not a `tf.function` with an input signature."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import load_signature
from attention_zoo.export import save_export
from attention_zoo.export.serving_module import ServingModule
from tests.support.toy_bundle import ToyBundle


class ScalingModule(ServingModule):
    """`serve(x)` -> `y = scale * x` and the text of the `words` asset."""

    def __init__(self, words_path):
        super().__init__(name="scaling", assets={"words": words_path})
        self.scale = tf.Variable(3.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def serve(self, x):
        words = tf.io.read_file(self.asset_path("words"))
        return {"y": self.scale * x, "words": tf.fill(tf.shape(x), words)}


class TwoSignatureModule(ScalingModule):
    SIGNATURES = {**ServingModule.SIGNATURES, "negate": "negate"}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def negate(self, x):
        return {"y": -x}


def _words(tmp_path):
    path = tmp_path / "source" / "words.txt"
    path.parent.mkdir()
    path.write_text("red dog\n")
    return str(path)


def test_serve_is_the_default_signature_with_state_and_assets(tmp_path):
    module = ScalingModule(_words(tmp_path))
    path = save_export(ToyBundle(), module, str(tmp_path / "toy" / "1"), False)
    os.remove(tmp_path / "source" / "words.txt")  # read from the export now
    with open(os.path.join(path, "assets", "words.txt")) as f:
        assert f.read() == "red dog\n"
    serve = load_signature(str(tmp_path / "toy"))
    outputs = serve(x=tf.constant([1.0, -2.0]))
    np.testing.assert_allclose(outputs["y"].numpy(), [3.0, -6.0])
    assert outputs["words"].numpy().tolist() == [b"red dog\n"] * 2
    assert sorted(tf.saved_model.load(path).signatures) == ["serving_default"]


def test_more_signatures_are_saved_under_their_keys(tmp_path):
    module = TwoSignatureModule(_words(tmp_path))
    path = save_export(ToyBundle(), module, str(tmp_path / "1"), False)
    loaded = tf.saved_model.load(path)
    assert sorted(loaded.signatures) == ["negate", "serving_default"]
    negate = load_signature(path, "negate")
    np.testing.assert_allclose(negate(x=tf.constant([2.0]))["y"], [-2.0])


def test_a_signature_must_be_a_tf_function_with_an_input_signature(tmp_path):
    class Untyped(ServingModule):
        @tf.function
        def serve(self, x):
            return {"y": x}

    class Missing(ServingModule):
        pass

    for module in (Untyped(), Missing()):
        with pytest.raises(TypeError, match="'serving_default' needs"):
            save_export(ToyBundle(), module, str(tmp_path / "1"), False)
        assert os.listdir(tmp_path) == []


def test_an_unknown_asset_is_a_key_error(tmp_path):
    module = ScalingModule(_words(tmp_path))
    with pytest.raises(KeyError, match="No asset 'vocabulary'"):
        module.asset_path("vocabulary")


def test_a_plain_module_with_serve_saves_as_serving_default(tmp_path):
    module = tf.Module()
    module.serve = tf.function(
        lambda x: {"y": x + 1.0},
        input_signature=[tf.TensorSpec([None], tf.float32, name="x")],
    )
    path = save_export(ToyBundle(), module, str(tmp_path / "1"), False)
    np.testing.assert_allclose(
        load_signature(path)(x=tf.constant([1.0]))["y"], [2.0]
    )
    with pytest.raises(TypeError, match="`serve`"):
        save_export(ToyBundle(), tf.Module(), str(tmp_path / "2"), False)


def test_importing_the_package_does_not_import_tensorflow():
    code = (
        "import sys, attention_zoo.export as export; "
        "assert 'tensorflow' not in sys.modules, 'import'; "
        "export.resolve_version, export.load_signature, export.save_export; "
        "assert 'tensorflow' not in sys.modules, 'functions'; "
        "from attention_zoo.export.serving_module import ServingModule; "
        "assert 'tensorflow' in sys.modules"
    )
    environment = {**os.environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
