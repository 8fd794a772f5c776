import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.blocks import stream_sequence
from attention_zoo.layers import CausalDilatedConv1D
from tests.support.causal_reference import input_gradient
from tests.support.causal_reference import seen_steps
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy


def np_causal_conv1d(x, kernel, bias, dilation_rate):
    """NumPy reference: left zero padding, then a valid dilated conv."""
    size, _, filters = kernel.shape
    pad = dilation_rate * (size - 1)
    padded = np.pad(x, ((0, 0), (pad, 0), (0, 0)))
    batch, steps, _ = x.shape
    out = np.zeros((batch, steps, filters), "float64")
    for t in range(steps):
        for k in range(size):
            # Tap k reads x[t - d * (K - 1 - k)], i.e. padded[t + d * k].
            out[:, t] += padded[:, t + dilation_rate * k] @ kernel[k]
    return out + (0 if bias is None else bias)


def random_conv(filters, kernel_size, dilation_rate, channels, **kwargs):
    layer = CausalDilatedConv1D(filters, kernel_size, dilation_rate, **kwargs)
    layer.build((None, None, channels))
    weights = [
        np.random.randn(*w.shape).astype("float32") for w in layer.weights
    ]
    layer.set_weights(weights)
    return layer, weights


CONFIGS = [
    dict(kernel_size=2, dilation_rate=1),
    dict(kernel_size=3, dilation_rate=2),
    dict(kernel_size=2, dilation_rate=4, use_bias=False),
    dict(kernel_size=1, dilation_rate=1),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_layer_harness(config):
    x = np.random.rand(2, 8, 3).astype("float32")
    run_layer_test(
        CausalDilatedConv1D,
        dict(filters=4, activation="tanh", **config),
        x,
        expected_output_shape=(2, 8, 4),
        expected_num_trainable_weights=2 if config.get("use_bias", 1) else 1,
    )


@pytest.mark.parametrize("config", CONFIGS)
def test_matches_numpy_reference(config):
    x = np.random.randn(2, 7, 3).astype("float32")
    layer, weights = random_conv(5, channels=3, **config)
    bias = weights[1] if config.get("use_bias", True) else None
    expected = np_causal_conv1d(x, weights[0], bias, config["dilation_rate"])
    np.testing.assert_allclose(to_numpy(layer(x)), expected, atol=1e-5)


def test_hand_checked_case():
    # y[t] = 1 * x[t - 2] + 10 * x[t] + 0.5, with x[t < 0] = 0.
    layer = CausalDilatedConv1D(1, kernel_size=2, dilation_rate=2)
    layer.build((None, None, 1))
    layer.set_weights(
        [np.array([[[1.0]], [[10.0]]], "float32"), np.array([0.5], "float32")]
    )
    x = np.arange(1, 6, dtype="float32").reshape(1, 5, 1)
    expected = [10.5, 20.5, 31.5, 42.5, 53.5]
    np.testing.assert_allclose(to_numpy(layer(x))[0, :, 0], expected)


@pytest.mark.parametrize("config", CONFIGS[:3])
def test_equals_keras_causal_conv1d_with_copied_weights(config):
    x = np.random.randn(2, 8, 3).astype("float32")
    keras_conv = keras.layers.Conv1D(4, padding="causal", **config)
    keras_conv(x)
    layer = CausalDilatedConv1D(4, **config)
    layer(x)
    layer.set_weights(keras_conv.get_weights())
    np.testing.assert_allclose(
        to_numpy(layer(x)), to_numpy(keras_conv(x)), atol=1e-5
    )


def test_receptive_field_property():
    assert CausalDilatedConv1D(2, 3, 4).receptive_field == 9
    assert CausalDilatedConv1D(2, 1, 7).receptive_field == 1


@pytest.mark.parametrize("t", [0, 3, 7])
def test_gradient_into_past_only(t):
    x = np.random.randn(2, 8, 3).astype("float32")
    layer, _ = random_conv(4, 2, 2, channels=3)
    grad = input_gradient(layer, x, t)
    assert np.all(grad[:, t + 1 :] == 0)
    assert np.any(grad[:, t] != 0)


def test_changing_future_inputs_leaves_earlier_outputs_unchanged():
    x = np.random.randn(2, 8, 3).astype("float32")
    layer, _ = random_conv(4, 3, 2, channels=3)
    changed = x.copy()
    changed[:, 5:] = np.random.randn(2, 3, 3) * 100
    before, after = to_numpy(layer(x)), to_numpy(layer(changed))
    np.testing.assert_array_equal(before[:, :5], after[:, :5])
    assert not np.allclose(before[:, 5:], after[:, 5:])


@pytest.mark.parametrize(
    "kernel_size, dilations", [(2, (1, 2, 4)), (3, (1, 3)), (2, (2, 1))]
)
def test_receptive_field_of_a_stack_is_exact(kernel_size, dilations):
    receptive_field = 1 + (kernel_size - 1) * sum(dilations)
    steps = receptive_field + 4
    x = np.random.rand(1, steps, 2).astype("float32")
    layers = [
        CausalDilatedConv1D(
            3, kernel_size, d, kernel_initializer="ones", activation="relu"
        )
        for d in dilations
    ]

    def stack(inputs):
        for layer in layers:
            inputs = layer(inputs)
        return inputs

    t = steps - 1
    seen = seen_steps(stack, x, t)
    # Exactly the inputs t - R + 1, ..., t: not t - R, not the future.
    np.testing.assert_array_equal(
        seen, np.arange(t - receptive_field + 1, t + 1)
    )


@pytest.mark.parametrize("config", CONFIGS)
def test_streaming_equals_full_pass(config):
    x = np.random.randn(2, 9, 3).astype("float32")
    layer, _ = random_conv(4, channels=3, **config)
    state = layer.get_initial_state(2)
    pad = config["dilation_rate"] * (config["kernel_size"] - 1)
    assert tuple(state.shape) == (2, pad, 3)
    outputs = []
    for t in range(9):
        y_t, state = layer.step(x[:, t], state)
        outputs.append(to_numpy(y_t))
    full = to_numpy(layer(x))
    np.testing.assert_allclose(np.stack(outputs, 1), full, atol=1e-5)
    # The compiled loop over steps gives the same.
    streamed, _ = jit(lambda: stream_sequence(layer, x))()
    np.testing.assert_allclose(to_numpy(streamed), full, atol=1e-5)


def test_masked_values_do_not_change_output_and_mask_is_passed_on():
    x = np.random.randn(2, 6, 3).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0], [0, 1, 1, 0, 1, 1]], bool)
    layer, _ = random_conv(4, 2, 1, channels=3)
    out = to_numpy(layer(x, mask=mask))
    changed = np.where(mask[..., None], x, 1e4).astype("float32")
    np.testing.assert_allclose(to_numpy(layer(changed, mask=mask)), out)
    # Masked steps read as zeros and give zero outputs.
    zeroed = to_numpy(layer(np.where(mask[..., None], x, 0.0)))
    np.testing.assert_allclose(out, np.where(mask[..., None], zeroed, 0.0))
    np.testing.assert_array_equal(
        to_numpy(layer.compute_mask(x, ops.convert_to_tensor(mask))), mask
    )
    # A fully masked row is finite (zeros).
    full = to_numpy(layer(x, mask=np.zeros((2, 6), bool)))
    np.testing.assert_array_equal(full, 0.0)


def test_implicit_embedding_mask_equals_explicit_mask():
    ids = np.array([[3, 1, 4, 0, 0], [2, 7, 0, 0, 0]], "int32")
    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(10, 3, mask_zero=True)
    conv = CausalDilatedConv1D(4, 2, 2)
    outputs = conv(embedded(inputs))
    model = keras.Model(inputs, outputs)
    assert outputs._keras_mask is not None
    implicit = to_numpy(model(ids))
    explicit = to_numpy(conv(embedded(ids), mask=ids != 0))
    np.testing.assert_allclose(implicit, explicit, atol=1e-6)


def test_model_round_trip(tmp_path):
    inputs = keras.Input((None, 3))
    outputs = CausalDilatedConv1D(4, 3, 2, activation="relu")(inputs)
    model = keras.Model(inputs, outputs)
    x = np.random.randn(2, 8, 3).astype("float32")
    assert_model_round_trip(model, x, tmp_path)


def test_mixed_bfloat16_with_large_inputs_close_to_float32():
    x = (np.random.randn(2, 8, 3) * 100).astype("float32")
    layer, weights = random_conv(4, 2, 2, channels=3)
    mixed = CausalDilatedConv1D(4, 2, 2, dtype="mixed_bfloat16")
    mixed.build((None, None, 3))
    mixed.set_weights(weights)
    out = to_numpy(ops.cast(mixed(x), "float32"))
    assert np.all(np.isfinite(out))
    expected = to_numpy(layer(x))
    np.testing.assert_allclose(out, expected, rtol=0.05, atol=0.05 * 100)
    y_t, state = mixed.step(x[:, 0], mixed.get_initial_state(2))
    assert keras.backend.standardize_dtype(y_t.dtype) == "bfloat16"


@pytest.mark.parametrize(
    "kwargs, argname",
    [
        (dict(filters=0), "filters"),
        (dict(filters=2, kernel_size=-1), "kernel_size"),
        (dict(filters=2, dilation_rate=1.5), "dilation_rate"),
        (dict(filters=True), "filters"),
    ],
)
def test_invalid_arguments(kwargs, argname):
    with pytest.raises(ValueError, match=argname):
        CausalDilatedConv1D(**kwargs)


def test_invalid_input_rank():
    with pytest.raises(ValueError, match="rank 3"):
        CausalDilatedConv1D(2)(np.zeros((2, 3), "float32"))
