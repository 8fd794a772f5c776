import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.blocks import TCN
from attention_zoo.blocks import autoregressive_generate
from attention_zoo.blocks import stream_sequence
from tests.support.causal_reference import input_gradient
from tests.support.causal_reference import np_causal_conv1d
from tests.support.causal_reference import seen_steps
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy


def np_tcn(x, tcn):
    """NumPy TCN from the layer's weights (normalization None/layer/weight)."""
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    for block in tcn._blocks:
        h = x
        for j in (1, 2):
            conv = block[f"conv_{j}"]
            kernel = to_numpy(conv.kernel)
            if tcn.normalization == "weight":
                norm = np.sqrt(np.sum(kernel**2, axis=(0, 1)))
                kernel = kernel * to_numpy(conv.kernel_scale) / norm
            h = np_causal_conv1d(
                h, kernel, to_numpy(conv.bias), conv.dilation_rate
            )
            if tcn.normalization == "layer":
                norm = block[f"norm_{j}"]
                mean = h.mean(-1, keepdims=True)
                var = h.var(-1, keepdims=True)
                h = (h - mean) / np.sqrt(var + norm.epsilon)
                h = h * to_numpy(norm.gamma) + to_numpy(norm.beta)
            h = relu(h)
        shortcut = x
        if block["shortcut"] is not None:
            conv = block["shortcut"]
            shortcut = x @ to_numpy(conv.kernel)[0] + to_numpy(conv.bias)
        x = relu(h + shortcut)
    return x


def randomize(layer, scale=0.5):
    layer.set_weights(
        [
            (np.random.randn(*w.shape) * scale + (w.name == "gamma")).astype(
                "float32"
            )
            if w.name != "moving_variance"
            else np.random.uniform(0.5, 2.0, w.shape).astype("float32")
            for w in layer.weights
        ]
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(normalization="layer"),
        dict(normalization=None, return_sequences=False),
        dict(normalization="weight", dropout=0.1, seed=1),
        dict(normalization="batch", kernel_size=3),
    ],
)
def test_layer_harness(kwargs):
    x = np.random.rand(2, 8, 3).astype("float32")
    return_sequences = kwargs.get("return_sequences", True)
    run_layer_test(
        TCN,
        dict(filters=4, dilations=(2,), **kwargs),
        x,
        expected_output_shape=(2, 8, 4) if return_sequences else (2, 4),
    )


@pytest.mark.parametrize("normalization", [None, "layer", "weight"])
@pytest.mark.parametrize("channels", [3, 4])
def test_matches_numpy_reference(normalization, channels):
    x = np.random.randn(2, 7, channels).astype("float32")
    tcn = TCN(4, kernel_size=2, dilations=(1, 2), normalization=normalization)
    tcn.build((None, None, channels))
    randomize(tcn)
    assert (tcn._blocks[0]["shortcut"] is None) == (channels == 4)
    np.testing.assert_allclose(to_numpy(tcn(x)), np_tcn(x, tcn), atol=1e-5)


@pytest.mark.parametrize(
    "kernel_size, dilations, expected", [(2, (1, 2, 4), 15), (3, (1, 3), 17)]
)
def test_receptive_field_is_exact_by_gradients(
    kernel_size, dilations, expected
):
    tcn = TCN(
        3,
        kernel_size=kernel_size,
        dilations=dilations,
        normalization=None,
        # Positive weights and inputs keep every ReLU open.
        kernel_initializer=keras.initializers.RandomUniform(0.1, 1.0),
    )
    assert tcn.receptive_field == expected
    steps = expected + 3
    x = np.random.uniform(0.1, 1.0, (1, steps, 2)).astype("float32")
    t = steps - 2
    seen = seen_steps(tcn, x, t)
    # Inputs t - R + 1 ... t are seen; t - R and the future are not.
    np.testing.assert_array_equal(seen, np.arange(t - expected + 1, t + 1))


def test_default_tcn_never_sees_the_future_or_beyond_its_field():
    tcn = TCN(4, dilations=(1, 2))
    r = tcn.receptive_field
    x = np.random.randn(2, 10, 3).astype("float32")
    t = 8
    grad = input_gradient(tcn, x, t)
    assert np.all(grad[:, t + 1 :] == 0)
    assert np.all(grad[:, : t - r + 1] == 0)
    assert np.any(grad[:, t] != 0)


@pytest.mark.parametrize("normalization", [None, "layer", "weight", "batch"])
def test_streaming_equals_full_pass(normalization):
    x = np.random.randn(2, 9, 3).astype("float32")
    tcn = TCN(4, kernel_size=3, dilations=(1, 2), normalization=normalization)
    tcn.build((None, None, 3))
    randomize(tcn)
    full = to_numpy(tcn(x, training=False))
    state = tcn.get_initial_state(2)
    outputs = []
    for t in range(9):
        y_t, state = tcn.step(x[:, t], state)
        outputs.append(to_numpy(y_t))
    np.testing.assert_allclose(np.stack(outputs, 1), full, atol=1e-5)
    streamed, _ = jit(lambda: stream_sequence(tcn, x))()
    np.testing.assert_allclose(to_numpy(streamed), full, atol=1e-5)


def test_compiled_generation_equals_python_loop():
    tcn = TCN(4, dilations=(1, 2))
    tcn.build((None, None, 3))
    head = keras.layers.Dense(3, activation="tanh")
    head.build((None, 4))
    x0 = np.random.randn(2, 3).astype("float32")
    generated = to_numpy(
        jit(lambda: autoregressive_generate(tcn, head, x0, 6))()
    )
    x, state, expected = x0, tcn.get_initial_state(2), []
    for _ in range(6):
        y, state = tcn.step(x, state)
        x = head(y)
        expected.append(to_numpy(x))
    np.testing.assert_allclose(generated, np.stack(expected, 1), atol=1e-5)


@pytest.mark.parametrize("return_sequences", [True, False])
def test_masks(return_sequences):
    x = np.random.randn(2, 6, 3).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
    tcn = TCN(4, dilations=(1, 2), return_sequences=return_sequences)
    out = to_numpy(tcn(x, mask=mask))
    changed = np.where(mask[..., None], x, 1e4).astype("float32")
    np.testing.assert_allclose(to_numpy(tcn(changed, mask=mask)), out)
    if return_sequences:
        np.testing.assert_array_equal(out[0, 4:], 0.0)
        expected_mask = mask
    else:
        expected_mask = None
    got_mask = tcn.compute_mask(x, ops.convert_to_tensor(mask))
    if expected_mask is None:
        assert got_mask is None
    else:
        np.testing.assert_array_equal(to_numpy(got_mask), expected_mask)
    fully_masked = to_numpy(tcn(x, mask=np.zeros((2, 6), bool)))
    np.testing.assert_array_equal(fully_masked, 0.0)


def test_last_step_is_the_last_unmasked_one():
    x = np.random.randn(2, 6, 3).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
    sequences = TCN(4, dilations=(1, 2))
    sequences.build((None, None, 3))
    last = TCN.from_config(sequences.get_config() | {"return_sequences": False})
    last.build((None, None, 3))
    last.set_weights(sequences.get_weights())
    full = to_numpy(sequences(x, mask=mask))
    np.testing.assert_allclose(
        to_numpy(last(x, mask=mask)), full[[0, 1], [2, 5]], atol=1e-6
    )


def test_implicit_embedding_mask_equals_explicit_mask():
    ids = np.array([[3, 1, 4, 0, 0], [2, 7, 0, 0, 0]], "int32")
    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(10, 3, mask_zero=True)
    tcn = TCN(4, dilations=(1, 2))
    model = keras.Model(inputs, tcn(embedded(inputs)))
    explicit = to_numpy(tcn(embedded(ids), mask=ids != 0))
    np.testing.assert_allclose(to_numpy(model(ids)), explicit, atol=1e-6)


def test_dropout_is_off_in_inference():
    # Training with dropout runs in the harness; here it changes nothing.
    x = np.random.randn(2, 8, 3).astype("float32")
    plain = TCN(4, dilations=(1,))
    plain.build((None, None, 3))
    dropped = TCN(4, dilations=(1,), dropout=0.5, seed=3)
    dropped.build((None, None, 3))
    dropped.set_weights(plain.get_weights())
    np.testing.assert_array_equal(to_numpy(dropped(x)), to_numpy(plain(x)))


@pytest.mark.parametrize("normalization", ["layer", "weight"])
def test_model_round_trip(tmp_path, normalization):
    inputs = keras.Input((None, 3))
    tcn = TCN(4, dilations=(1, 2), normalization=normalization)
    outputs = keras.layers.Dense(2, dtype="float32")(tcn(inputs))
    model = keras.Model(inputs, outputs)
    randomize(tcn)
    x = np.random.randn(2, 8, 3).astype("float32")
    assert_model_round_trip(model, x, tmp_path)


def test_mixed_bfloat16_with_large_inputs_close_to_float32():
    x = (np.random.randn(2, 8, 3) * 100).astype("float32")
    tcn = TCN(4, dilations=(1, 2))
    tcn.build((None, None, 3))
    mixed = TCN(4, dilations=(1, 2), dtype="mixed_bfloat16")
    mixed.build((None, None, 3))
    mixed.set_weights(tcn.get_weights())
    out = to_numpy(ops.cast(mixed(x), "float32"))
    assert np.all(np.isfinite(out))
    expected = to_numpy(tcn(x))
    # bfloat16 keeps ~3 digits: compare on the scale of the output.
    atol = 0.02 * np.abs(expected).max()
    np.testing.assert_allclose(out, expected, atol=atol)
    streamed, _ = stream_sequence(mixed, x)
    streamed = to_numpy(ops.cast(streamed, "float32"))
    np.testing.assert_allclose(streamed, expected, atol=atol)


@pytest.mark.parametrize(
    "kwargs, argname",
    [
        (dict(filters=0), "filters"),
        (dict(filters=2, kernel_size=0), "kernel_size"),
        (dict(filters=2, dilations=()), "dilations"),
        (dict(filters=2, dilations=(1, -2)), "dilations"),
        (dict(filters=2, dropout=1.0), "dropout"),
        (dict(filters=2, normalization="group"), "normalization"),
    ],
)
def test_invalid_arguments(kwargs, argname):
    with pytest.raises(ValueError, match=argname):
        TCN(**kwargs)


def test_invalid_input_rank():
    with pytest.raises(ValueError, match="rank 3"):
        TCN(2)(np.zeros((2, 3), "float32"))
