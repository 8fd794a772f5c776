import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.blocks import WaveNet
from attention_zoo.blocks import stream_sequence
from tests.support.causal_reference import np_causal_conv1d
from tests.support.causal_reference import seen_steps
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

SMALL = dict(residual_channels=4, skip_channels=5, dilations=(1, 2), stacks=2)


def np_wavenet(x, net):
    """NumPy WaveNet from the layer's weights."""

    def conv(layer, h):
        kernel, bias = (to_numpy(w) for w in (layer.kernel, layer.bias))
        return np_causal_conv1d(h, kernel, bias, layer.dilation_rate)

    def dense(layer, h):
        return h @ to_numpy(layer.kernel) + to_numpy(layer.bias)

    r = net.residual_channels
    h = conv(net._input_conv, x)
    skip = 0.0
    for i, gate in enumerate(net._gate_convs):
        a = conv(gate, h)
        z = np.tanh(a[..., :r]) / (1.0 + np.exp(-a[..., r:]))
        skip = skip + dense(net._skip_denses[i], z)
        if i < len(net._gate_convs) - 1:
            h = h + dense(net._residual_denses[i], z)
    return skip


def randomize(layer):
    layer.set_weights(
        [
            np.random.randn(*w.shape).astype("float32") * 0.5
            for w in layer.weights
        ]
    )


def test_layer_harness():
    x = np.random.rand(2, 8, 3).astype("float32")
    run_layer_test(
        WaveNet,
        SMALL,
        x,
        expected_output_shape=(2, 8, 5),
        # Input conv, 4 gated convs, 4 skip and 3 residual 1x1s: 2 each.
        expected_num_trainable_weights=2 * (1 + 4 + 4 + 3),
    )


@pytest.mark.parametrize("kernel_size", [2, 3])
def test_matches_numpy_reference(kernel_size):
    x = np.random.randn(2, 7, 3).astype("float32")
    net = WaveNet(**SMALL, kernel_size=kernel_size)
    net.build((None, None, 3))
    randomize(net)
    np.testing.assert_allclose(to_numpy(net(x)), np_wavenet(x, net), atol=1e-5)


def test_hand_checked_case():
    # One layer, all weights 1 or 0: h = x[t-1] + x[t], z = tanh(h) sig(h).
    net = WaveNet(1, 1, dilations=(1,), stacks=1)
    net.build((None, None, 1))
    net.set_weights(
        [
            np.ones((2, 1, 1), "float32"),  # input conv kernel
            np.zeros((1,), "float32"),
            np.array([[[0.0, 0.0]], [[1.0, 1.0]]], "float32"),  # gate conv
            np.zeros((2,), "float32"),
            np.full((1, 1), 2.0, "float32"),  # skip: 2 z + 1
            np.ones((1,), "float32"),
        ]
    )
    x = np.array([1.0, 2.0, 0.0], "float32").reshape(1, 3, 1)
    h = np.array([1.0, 3.0, 2.0])
    expected = 2 * np.tanh(h) / (1 + np.exp(-h)) + 1
    np.testing.assert_allclose(to_numpy(net(x))[0, :, 0], expected, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (dict(), 3071),  # 1 + (1 + 3 * 1023)
        (dict(dilations=(1, 2), stacks=2), 8),
        (dict(dilations=(1, 2), stacks=1, kernel_size=3), 9),
    ],
)
def test_receptive_field_property(kwargs, expected):
    assert WaveNet(4, 4, **kwargs).receptive_field == expected


def test_receptive_field_is_exact_by_gradients():
    net = WaveNet(**SMALL)
    r = net.receptive_field
    steps = r + 3
    x = np.random.randn(2, steps, 3).astype("float32")
    t = steps - 2
    seen = seen_steps(net, x, t)
    np.testing.assert_array_equal(seen, np.arange(t - r + 1, t + 1))


def test_changing_future_inputs_leaves_earlier_outputs_unchanged():
    net = WaveNet(**SMALL)
    x = np.random.randn(2, 8, 3).astype("float32")
    changed = x.copy()
    changed[:, 5:] += 10.0
    before, after = to_numpy(net(x)), to_numpy(net(changed))
    np.testing.assert_array_equal(before[:, :5], after[:, :5])
    assert not np.allclose(before[:, 5:], after[:, 5:])


@pytest.mark.parametrize("kernel_size", [2, 3])
def test_streaming_equals_full_pass(kernel_size):
    net = WaveNet(**SMALL, kernel_size=kernel_size)
    x = np.random.randn(2, 9, 3).astype("float32")
    full = to_numpy(net(x))
    state = net.get_initial_state(2)
    assert len(state) == 1 + 4
    assert tuple(state[-1].shape) == (2, 2 * (kernel_size - 1), 4)
    outputs = []
    for t in range(9):
        y_t, state = net.step(x[:, t], state)
        outputs.append(to_numpy(y_t))
    np.testing.assert_allclose(np.stack(outputs, 1), full, atol=1e-5)
    streamed, _ = jit(lambda: stream_sequence(net, x))()
    np.testing.assert_allclose(to_numpy(streamed), full, atol=1e-5)


def test_masks():
    net = WaveNet(**SMALL)
    x = np.random.randn(2, 6, 3).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0], [0, 1, 1, 1, 1, 1]], bool)
    out = to_numpy(net(x, mask=mask))
    changed = np.where(mask[..., None], x, 1e4).astype("float32")
    np.testing.assert_allclose(to_numpy(net(changed, mask=mask)), out)
    np.testing.assert_array_equal(out[~mask], 0.0)
    np.testing.assert_array_equal(
        to_numpy(net.compute_mask(x, ops.convert_to_tensor(mask))), mask
    )
    fully_masked = to_numpy(net(x, mask=np.zeros((2, 6), bool)))
    np.testing.assert_array_equal(fully_masked, 0.0)
    # Implicit Embedding mask equals the explicit one.
    ids = np.array([[3, 1, 4, 0, 0], [2, 7, 0, 0, 0]], "int32")
    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(10, 3, mask_zero=True)
    model = keras.Model(inputs, net(embedded(inputs)))
    explicit = to_numpy(net(embedded(ids), mask=ids != 0))
    np.testing.assert_allclose(to_numpy(model(ids)), explicit, atol=1e-6)


def test_model_round_trip(tmp_path):
    inputs = keras.Input((None, 3))
    net = WaveNet(**SMALL)
    skip = keras.layers.ReLU()(net(inputs))
    outputs = keras.layers.Dense(6, dtype="float32")(skip)
    model = keras.Model(inputs, outputs)
    x = np.random.randn(2, 8, 3).astype("float32")
    assert_model_round_trip(model, x, tmp_path)


def test_mixed_bfloat16_with_large_inputs_close_to_float32():
    x = (np.random.randn(2, 8, 3) * 100).astype("float32")
    net = WaveNet(**SMALL)
    net.build((None, None, 3))
    mixed = WaveNet(**SMALL, dtype="mixed_bfloat16")
    mixed.build((None, None, 3))
    mixed.set_weights(net.get_weights())
    expected = to_numpy(net(x))
    out = to_numpy(ops.cast(mixed(x), "float32"))
    assert np.all(np.isfinite(out))
    # bfloat16 keeps ~3 digits: compare on the scale of the output.
    atol = 0.02 * np.abs(expected).max()
    np.testing.assert_allclose(out, expected, atol=atol)
    streamed, _ = stream_sequence(mixed, x)
    streamed = to_numpy(ops.cast(streamed, "float32"))
    np.testing.assert_allclose(streamed, expected, atol=atol)


@pytest.mark.parametrize(
    "kwargs, argname",
    [
        (dict(residual_channels=0), "residual_channels"),
        (dict(skip_channels=-1), "skip_channels"),
        (dict(stacks=0), "stacks"),
        (dict(kernel_size=0), "kernel_size"),
        (dict(dilations=(1, 0)), "dilations"),
        (dict(dilations=()), "dilations"),
    ],
)
def test_invalid_arguments(kwargs, argname):
    config = dict(residual_channels=4, skip_channels=4) | kwargs
    with pytest.raises(ValueError, match=argname):
        WaveNet(**config)


def test_invalid_input_rank():
    with pytest.raises(ValueError, match="rank 3"):
        WaveNet(2, 2)(np.zeros((2, 3), "float32"))
