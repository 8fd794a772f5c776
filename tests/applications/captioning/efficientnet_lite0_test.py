"""`encoders.efficientnet_lite0`: the Keras port of EfficientNet-Lite0
reproduces the original model's ImageNet predictions, loads the PyTorch
weights key for key, and fails clearly on missing or wrong weights."""

import hashlib
import importlib.machinery
import importlib.util

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps.captioning import efficientnet_lite
from attention_zoo_apps.captioning import encoders
from tests.support.torch_files import save_torch_state_dict

FOLDER = "imagenet-efficientnet-lite0"
NPZ = "efficientnet_lite0_state_dict.npz"
# The original PyTorch model's predictions, from SOURCE.md (3 decimals).
CHELSEA_TOP3 = [(285, 0.789), (282, 0.100), (281, 0.070)]
COFFEE_TOP1 = 967
# Half a unit in the reference's last digit (it is rounded to 0.001) plus
# the 1e-4 for the port: 6e-4. Measured: at most 5.5e-4 (class
# 281: 0.06945 against 0.070); an antialiased resize is off by 9e-3.
TOLERANCE = 5e-4 + 1e-4


def _image(path, antialias=False):
    """`(224, 224, 3)` float32 RGB in `[0, 255]`: the whole image resized
    bilinearly with half-pixel centres (PyTorch's `interpolate`, the
    resize behind the reference numbers)."""
    image = tf.io.decode_png(tf.io.read_file(str(path)), channels=3)
    image = keras.ops.image.resize(
        keras.ops.cast(image, "float32"), (224, 224), antialias=antialias
    )
    return keras.ops.convert_to_numpy(image)


@pytest.fixture
def npz_path(shared_data):
    return shared_data / FOLDER / NPZ


@pytest.fixture
def classifier(npz_path):
    return encoders.efficientnet_lite0(weights=npz_path, include_top=True)


def test_reproduces_the_reference_predictions(shared_data, classifier):
    folder = shared_data / FOLDER
    images = np.stack(
        [
            _image(folder / "chelsea.png"),
            _image(folder / "coffee.png"),
            _image(folder / "chelsea.png", antialias=True),
        ]
    )
    chelsea, coffee, antialiased = classifier.predict(images, verbose=0)

    top3 = np.argsort(-chelsea)[:3]
    assert top3.tolist() == [c for c, _ in CHELSEA_TOP3]
    differences = [abs(chelsea[c] - p) for c, p in CHELSEA_TOP3]
    assert max(differences) <= TOLERANCE, differences
    assert int(np.argmax(coffee)) == COFFEE_TOP1
    # The resize matters at this precision: an antialiased one is not the
    # reference's.
    assert max(abs(antialiased[c] - p) for c, p in CHELSEA_TOP3) > 5e-3


def test_every_array_is_used_exactly_once(npz_path, classifier):
    state = encoders.load_state_dict(npz_path)
    used = encoders.load_torch_weights(classifier, state)
    assert len(used) == len(set(used))
    counters = {k for k in state if k.endswith(".num_batches_tracked")}
    assert len(counters) == 49
    assert set(used) == set(state) - counters

    features = efficientnet_lite.build_efficientnet_lite0()
    used = encoders.load_torch_weights(features, state)
    assert set(used) == set(state) - counters - {"_fc.weight", "_fc.bias"}


def test_unexpected_arrays_are_named(npz_path, classifier):
    state = encoders.load_state_dict(npz_path)
    state["_blocks.3._se_reduce.weight"] = np.zeros((6, 144, 1, 1))
    with pytest.raises(ValueError, match=r"weights\.npz.*_se_reduce"):
        encoders.load_torch_weights(classifier, state, source="weights.npz")


def test_a_converted_package_file_gives_the_same_model(
    npz_path, classifier, tmp_path, monkeypatch
):
    # weights="imagenet" end to end: the shared arrays written as the
    # package's legacy .pth, found, converted into the cache, loaded.
    with np.load(npz_path) as arrays:
        state = {key: arrays[key] for key in arrays.files}
    _fake_package(tmp_path, monkeypatch, state)
    model = encoders.efficientnet_lite0(weights="imagenet", include_top=True)
    for ours, theirs in zip(model.weights, classifier.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# --- shapes, stages, XLA, precision, saving --------------------------------


@pytest.mark.parametrize(
    "output_stage, shape",
    [(None, (7, 7, 1280)), (4, (14, 14, 80)), (5, (14, 14, 112))],
)
def test_feature_maps_at_224_pixels(output_stage, shape):
    model = encoders.efficientnet_lite0(output_stage=output_stage)
    features = model.predict(np.zeros((1, 224, 224, 3)), verbose=0)
    assert features.shape == (1, *shape)


def test_any_image_size_gives_a_grid_of_one_cell_per_32_pixels():
    model = encoders.efficientnet_lite0()
    features = model(np.zeros((1, 100, 60, 3), "float32"), training=False)
    assert tuple(features.shape) == (1, 4, 2, 1280)


def test_the_top_gives_probabilities_in_float32_under_mixed_precision():
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = encoders.efficientnet_lite0(include_top=True)
    images = np.random.uniform(0, 255, (2, 224, 224, 3))
    probabilities = model.predict(images, verbose=0)
    assert model.output.dtype == "float32"
    assert probabilities.shape == (2, 1000)
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, atol=1e-5)


def test_xla_equals_eager():
    model = encoders.efficientnet_lite0()
    images = np.random.uniform(0, 255, (2, 64, 64, 3)).astype("float32")
    eager = model(images, training=False)
    compiled = tf.function(
        lambda x: model(x, training=False), jit_compile=True
    )(images)
    assert tuple(compiled.shape) == (2, 2, 2, 1280)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-4)


def test_keras_file_round_trip(tmp_path):
    model = encoders.efficientnet_lite0(output_stage=2)
    images = np.random.uniform(0, 255, (1, 32, 32, 3)).astype("float32")
    model.save(tmp_path / "lite0.keras")
    loaded = keras.saving.load_model(tmp_path / "lite0.keras")
    np.testing.assert_allclose(
        loaded(images, training=False), model(images, training=False)
    )


# --- errors ----------------------------------------------------------------


def test_a_missing_weights_file_is_named(tmp_path):
    path = tmp_path / "nowhere" / "lite0.npz"
    with pytest.raises(FileNotFoundError, match=str(path)):
        encoders.efficientnet_lite0(weights=path)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("lite0.npz", b"not a zip", "not a readable .npz"),
        ("lite0.pth", b"not a pickle", "not a readable PyTorch"),
        ("lite0.h5", b"", "unknown weights format"),
    ],
)
def test_an_unreadable_weights_file_is_named(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as raised:
        encoders.efficientnet_lite0(weights=path)
    assert str(path) in str(raised.value)


def test_a_state_dict_of_another_network_is_named(tmp_path):
    path = tmp_path / "b0.npz"
    np.savez(path, **{"_conv_stem.weight": np.zeros((48, 3, 3, 3))})
    with pytest.raises(ValueError, match=r"_conv_stem\.weight") as raised:
        encoders.efficientnet_lite0(weights=path)
    assert str(path) in str(raised.value)
    np.savez(path, **{"_fc.weight": np.zeros((1000, 1280))})
    with pytest.raises(ValueError, match=r"lacks \['_conv_stem\.weight'\]"):
        encoders.efficientnet_lite0(weights=path)


def test_imagenet_without_the_package_names_the_extra(monkeypatch):
    find_spec = importlib.util.find_spec

    def without_package(name, *args, **kwargs):
        if name == encoders.IMAGENET_PACKAGE:
            return None
        return find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", without_package)
    with pytest.raises(ImportError, match=r"attention-zoo\[imagenet\]"):
        encoders.efficientnet_lite0(weights="imagenet")


def test_imagenet_weights_are_converted_once_into_the_cache(
    tmp_path, monkeypatch
):
    state = {"a.weight": np.arange(6, dtype="float32").reshape(2, 3)}
    _fake_package(tmp_path, monkeypatch, state)

    path = encoders.imagenet_weights_path()

    assert path.parent == tmp_path / "cache"
    with np.load(path) as arrays:
        np.testing.assert_array_equal(arrays["a.weight"], state["a.weight"])

    def read_again(path):
        raise AssertionError("converted twice")

    monkeypatch.setattr(encoders, "read_torch_state_dict", read_again)
    assert encoders.imagenet_weights_path() == path


def test_a_package_file_that_does_not_match_its_hash_is_refused(
    tmp_path, monkeypatch
):
    _fake_package(tmp_path, monkeypatch, {"a": np.zeros(2, "float32")})
    (pth,) = (tmp_path / "package" / "models").glob("*.pth")
    pth.rename(pth.with_name("efficientnet-lite0-00000000.pth"))
    with pytest.raises(ValueError, match="sha256"):
        encoders.imagenet_weights_path()


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"output_stage": 0}, "output_stage"),
        ({"output_stage": 8}, "output_stage"),
        ({"output_stage": True}, "output_stage"),
        ({"include_top": True, "output_stage": 5}, "include_top"),
        ({"include_top": "yes"}, "include_top"),
        ({"weights": 3}, "weights"),
    ],
)
def test_bad_arguments_are_named(kwargs, argument):
    with pytest.raises(ValueError, match=f"Received: {argument}="):
        encoders.efficientnet_lite0(**kwargs)


def _fake_package(tmp_path, monkeypatch, state):
    """The weights package, with `state` as its legacy `.pth`, found by
    `importlib.util.find_spec`; the cache in `tmp_path / "cache"`."""
    models = tmp_path / "package" / "models"
    models.mkdir(parents=True)
    partial = models / "partial.pth"
    save_torch_state_dict(partial, state, layout="legacy")
    prefix = hashlib.sha256(partial.read_bytes()).hexdigest()[:8]
    partial.rename(models / f"efficientnet-lite0-{prefix}.pth")
    spec = importlib.machinery.ModuleSpec(
        encoders.IMAGENET_PACKAGE, None, is_package=True
    )
    spec.submodule_search_locations = [str(tmp_path / "package")]
    find_spec = importlib.util.find_spec

    def with_package(name, *args, **kwargs):
        if name == encoders.IMAGENET_PACKAGE:
            return spec
        return find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", with_package)
    monkeypatch.setenv("ATTENTION_ZOO_CACHE", str(tmp_path / "cache"))
