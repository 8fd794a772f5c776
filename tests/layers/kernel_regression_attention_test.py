"""KernelRegressionAttention: Nadaraya-Watson reference, bandwidth, LOO."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import KernelRegressionAttention
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, TQ, TV, D, DV = 2, 3, 6, 2, 4


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def np_nadaraya_watson(x, x_train, y_train, w, mask=None):
    """`sum_i softmax_i(-||x - x_i||^2 w^2 / 2) y_i`; x: (B, Tq, d)."""
    distance = np.sum((x[:, :, None] - x_train[:, None]) ** 2, axis=-1)
    scores = -0.5 * distance * w**2
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    weights = np_softmax(scores)
    return np.einsum("bqt,bt...->bq...", weights, y_train), weights


def test_small_case_by_hand():
    # x = 0, training inputs 0 and 1, targets 2 and 6, w = 1 (bandwidth 1):
    # scores 0 and -1/2, weights 1/(1 + e^-0.5) = 0.622459 and 0.377541.
    layer = KernelRegressionAttention(bandwidth=1.0)
    output, weights = layer(
        np.array([[0.0]], "float32"),
        np.array([[2.0, 6.0]], "float32"),
        key=np.array([[0.0, 1.0]], "float32"),
        return_attention_scores=True,
    )
    np.testing.assert_allclose(
        to_numpy(weights), [[[0.622459, 0.377541]]], atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(output), [[2 * 0.622459 + 6 * 0.377541]], atol=1e-5
    )


@pytest.mark.parametrize("bandwidth", [0.5, 2.0])
def test_scalar_inputs_match_numpy(bandwidth):
    layer = KernelRegressionAttention(bandwidth=bandwidth)
    x, x_train, y_train = random(B, TQ), random(B, TV), random(B, TV)
    output, weights = layer(
        x, y_train, key=x_train, return_attention_scores=True
    )
    expected, expected_weights = np_nadaraya_watson(
        x[..., None], x_train[..., None], y_train, 1 / bandwidth
    )
    assert tuple(output.shape) == (B, TQ)
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-5)
    # (B, T, 1) inputs and targets give the same predictions.
    output3 = layer(x[..., None], y_train[..., None], key=x_train[..., None])
    np.testing.assert_allclose(to_numpy(output3)[..., 0], expected, atol=1e-5)


def test_vector_inputs_match_numpy():
    layer = KernelRegressionAttention(bandwidth=1.5)
    x, x_train, y_train = random(B, TQ, D), random(B, TV, D), random(B, TV, DV)
    output = layer(x, y_train, key=x_train)
    expected, _ = np_nadaraya_watson(x, x_train, y_train, 1 / 1.5)
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)


def test_standard_checks():
    run_layer_test(
        KernelRegressionAttention,
        {"bandwidth": 0.7},
        {"query": random(B, TQ), "value": random(B, TV), "key": random(B, TV)},
        expected_output_shape=(B, TQ),
        expected_num_trainable_weights=1,
    )


def test_bandwidth_property_and_trainable_flag():
    layer = KernelRegressionAttention(bandwidth=0.25)
    assert layer.bandwidth == 0.25
    layer(random(B, TQ), random(B, TV), key=random(B, TV))
    assert layer.w.name == "w"
    np.testing.assert_allclose(to_numpy(layer.w), 4.0)
    layer.w.assign(-2.0)
    assert layer.bandwidth == pytest.approx(0.5)
    with pytest.raises(AttributeError):
        layer.bandwidth = 1.0
    frozen = KernelRegressionAttention(bandwidth=0.25, trainable=False)
    frozen(random(B, TQ), random(B, TV), key=random(B, TV))
    assert frozen.trainable_weights == [] and len(frozen.weights) == 1
    assert not KernelRegressionAttention.from_config(
        frozen.get_config()
    ).trainable


def test_leave_one_out_attention_mask():
    layer = KernelRegressionAttention(bandwidth=0.3)
    x_train, y_train = random(1, TV), random(1, TV)
    mask = ~np.eye(TV, dtype=bool)[None]  # (1, Tv, Tv)
    output, weights = layer(
        x_train,
        y_train,
        key=x_train,
        attention_mask=mask,
        return_attention_scores=True,
    )
    assert np.all(np.diag(to_numpy(weights)[0]) == 0)
    expected, _ = np_nadaraya_watson(
        x_train[..., None], x_train[..., None], y_train, 1 / 0.3, mask
    )
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)


def test_fit_reduces_leave_one_out_error():
    x_train = np.sort(np.random.rand(1, 40).astype("float32") * 5, axis=-1)
    y_train = 2 * np.sin(x_train) + x_train**0.8
    mask = ~np.eye(40, dtype=bool)[None]
    query = keras.Input((None,), name="query")
    key = keras.Input((None,), name="key")
    value = keras.Input((None,), name="value")
    attention_mask = keras.Input((None, None), dtype="bool", name="mask")
    layer = KernelRegressionAttention(bandwidth=3.0)
    output = layer(query, value, key=key, attention_mask=attention_mask)
    model = keras.Model([query, value, key, attention_mask], output)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    model.optimizer.build(model.trainable_variables)  # fit traces once
    inputs = [x_train, y_train, x_train, mask]
    before = model.evaluate(inputs, y_train, verbose=0)
    model.fit(inputs, y_train, epochs=20, verbose=0)
    assert model.evaluate(inputs, y_train, verbose=0) < 0.5 * before
    assert layer.bandwidth < 3.0


def test_model_round_trip(tmp_path):
    query = keras.Input((None,), name="query")
    value = keras.Input((None, DV), name="value")
    key = keras.Input((None,), name="key")
    layer = KernelRegressionAttention(bandwidth=0.6, name="kernel")
    model = keras.Model([query, value, key], layer(query, value, key=key))
    layer.w.assign(1.234)
    inputs = [random(B, TQ), random(B, TV, DV), random(B, TV)]
    loaded = assert_model_round_trip(model, inputs, tmp_path)
    restored = loaded.get_layer("kernel")
    assert restored.bandwidth == pytest.approx(1 / 1.234)


def test_mixed_precision_large_distances():
    # Distances of 10 to 50 (scores down to -1250), one exact match each.
    x_train = np.tile(10 * np.arange(TV, dtype="float32"), (B, 1))
    x, y_train = x_train[:, 1::2], random(B, TV)
    layers = {
        p: KernelRegressionAttention(dtype=p)
        for p in ("float32", "mixed_bfloat16")
    }
    expected = to_numpy(layers["float32"](x, y_train, key=x_train))
    output = layers["mixed_bfloat16"](x, y_train, key=x_train)
    output = to_numpy(ops.cast(output, "float32"))
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, expected, atol=3e-2)


@pytest.mark.parametrize("bandwidth", [0, -1.0, "wide", True])
def test_invalid_bandwidth(bandwidth):
    with pytest.raises(ValueError, match="bandwidth"):
        KernelRegressionAttention(bandwidth=bandwidth)


def test_query_and_key_widths_must_match():
    with pytest.raises(ValueError, match="key_shape"):
        KernelRegressionAttention()(
            random(B, TQ, 3), random(B, TV), key=random(B, TV, 2)
        )
