"""`SavedBundle.from_export`: every application's export is all it takes
to load the bundle again (config, vocabularies and the model's weights,
kept once in the SavedModel without optimizer slots)."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import registry
from tests.support.tiny_bundles import APPLICATIONS
from tests.support.tiny_bundles import tiny_bundle


@pytest.fixture(scope="module", params=APPLICATIONS)
def exported(request, tmp_path_factory):
    application = request.param
    bundle = tiny_bundle(application)
    base = tmp_path_factory.mktemp(application)
    bundle.export(str(base / "1"), jit_compile=False)
    return application, bundle, str(base)


def test_the_export_holds_the_model_weights_once(exported):
    _, bundle, base = exported
    reader = tf.train.load_checkpoint(
        os.path.join(base, "1", "variables", "variables")
    )
    keys = [k for k in reader.get_variable_to_shape_map() if "optimizer" in k]
    assert keys == []
    weights = sum(int(np.prod(w.shape)) for w in bundle.model.weights)
    stored = os.path.getsize(
        os.path.join(base, "1", "variables", "variables.data-00000-of-00001")
    )
    # float32 weights, with room for the tokenizers' tables only.
    assert weights * 4 <= stored < weights * 4 * 1.5 + 200_000


def test_from_export_gives_the_same_config_vocabularies_and_weights(exported):
    application, bundle, base = exported
    loaded = registry.get(application).bundle_class().from_export(base)
    assert loaded.config == bundle.config
    for attribute in type(bundle).tokenizer_dirs:
        assert (
            getattr(loaded, attribute).vocabulary
            == getattr(bundle, attribute).vocabulary
        )
    assert len(loaded.model.weights) == len(bundle.model.weights)
    for mine, theirs in zip(loaded.model.weights, bundle.model.weights):
        assert mine.path == theirs.path
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(mine), keras.ops.convert_to_numpy(theirs)
        )
    # A fresh optimizer: fine-tuning starts its own moments.
    assert loaded.model.optimizer is not None
    assert int(loaded.model.optimizer.iterations) == 0


def test_a_bundle_from_an_export_saves_and_loads(exported, tmp_path):
    application, bundle, base = exported
    bundle_class = registry.get(application).bundle_class()
    bundle_class.from_export(base).save(str(tmp_path))
    loaded = bundle_class.load(str(tmp_path))
    for mine, theirs in zip(loaded.model.weights, bundle.model.weights):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(mine), keras.ops.convert_to_numpy(theirs)
        )
    assert int(loaded.model.optimizer.iterations) == 0


def test_from_preset_takes_a_folder_and_refuses_other_exports(exported):
    application, _, base = exported
    bundle_class = registry.get(application).bundle_class()
    assert (
        bundle_class.from_preset(base).config == tiny_bundle(application).config
    )
    other = next(a for a in APPLICATIONS if a != application)
    with pytest.raises(ValueError, match=f"not an export of {other}"):
        registry.get(other).bundle_class().from_export(base)
    with pytest.raises(FileNotFoundError, match="shipped models"):
        bundle_class.from_preset("no-such-model-anywhere")


def test_a_beam_export_gives_the_bundle_its_search(tmp_path):
    """An export that serves a beam (as `--choose-search` writes one)
    decodes the same way from Python after `from_export`; a greedy one
    keeps greedy search."""
    from attention_zoo.decoding.searches import BeamSearch
    from attention_zoo.decoding.searches import Greedy
    from tests.support.tiny_bundles import columnar_inputs

    bundle = tiny_bundle("translation")
    beam = BeamSearch(beam_size=3, length_penalty=0.0)
    bundle.export(str(tmp_path / "beam" / "1"), search=beam, jit_compile=False)
    bundle.export(str(tmp_path / "greedy" / "1"), jit_compile=False)
    loaded = type(bundle).from_export(str(tmp_path / "beam"))
    assert loaded.search_defaults.resolve() == beam
    texts = columnar_inputs("translation")["text"]
    serve = tf.saved_model.load(str(tmp_path / "beam" / "1")).signatures[
        "serving_default"
    ]
    served = serve(text=tf.constant(texts))["translation"].numpy()
    assert loaded.translate(texts) == [text.decode() for text in served]
    greedy = type(bundle).from_export(str(tmp_path / "greedy"))
    assert greedy.search_defaults.resolve() == Greedy()
    # Loose options still override the export's default.
    assert greedy.search_defaults.resolve(beam_size=2).beam_size == 2
    assert loaded.search_defaults.resolve(beam_size=1) == Greedy()
