import keras
import numpy as np
from keras import ops

from attention_zoo.blocks import WaveNet
from attention_zoo.blocks import autoregressive_generate
from attention_zoo.blocks import stream_sequence
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy


def make_wavenet(dtype=None):
    net = WaveNet(4, 5, dilations=(1, 2), stacks=2, dtype=dtype)
    net.build((None, None, 2))
    head = keras.layers.Dense(2, activation="tanh", dtype="float32")
    head.build((None, 5))
    return net, head


def python_loop(net, head, x, state, num_steps):
    """Reference: one `step` per Python iteration."""
    outputs = []
    for _ in range(num_steps):
        y, state = net.step(x, state)
        x = head(y)
        outputs.append(to_numpy(ops.cast(x, "float32")))
    return np.stack(outputs, 1), state


def test_compiled_generation_equals_python_step_loop():
    net, head = make_wavenet()
    x0 = np.random.randn(2, 2).astype("float32")

    def generate():
        return autoregressive_generate(net, head, x0, 7)

    generated = to_numpy(jit(generate)())
    expected, _ = python_loop(net, head, x0, net.get_initial_state(2), 7)
    assert generated.shape == (2, 7, 2)
    np.testing.assert_allclose(generated, expected, atol=1e-5)


def test_generation_equals_full_passes_over_the_growing_sequence():
    # Output i of generation is head(net(inputs[: i + 1]))[:, -1].
    net, head = make_wavenet()
    x0 = np.random.randn(1, 2).astype("float32")
    generated = to_numpy(
        jit(lambda: autoregressive_generate(net, head, x0, 5))()
    )
    inputs = np.concatenate([x0[:, None], generated[:, :-1]], axis=1)
    full = to_numpy(head(net(inputs)))
    np.testing.assert_allclose(generated, full, atol=1e-5)


def test_prompted_generation_with_initial_and_returned_state():
    net, head = make_wavenet()
    prompt = np.random.randn(2, 4, 2).astype("float32")
    x0 = np.random.randn(2, 2).astype("float32")

    def generate():
        _, state = stream_sequence(net, prompt)
        return autoregressive_generate(
            net, head, x0, 3, initial_state=state, return_state=True
        )

    generated, state = jit(generate)()
    _, prompt_state = stream_sequence(net, prompt)
    expected, expected_state = python_loop(net, head, x0, prompt_state, 3)
    np.testing.assert_allclose(to_numpy(generated), expected, atol=1e-5)
    for got, want in zip(state, expected_state):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)


def test_stream_sequence_equals_full_pass():
    net, _ = make_wavenet()
    x = np.random.randn(2, 6, 2).astype("float32")
    streamed, state = stream_sequence(net, x)
    np.testing.assert_allclose(to_numpy(streamed), to_numpy(net(x)), atol=1e-5)
    assert len(state) == len(net.get_initial_state(2))


def test_mixed_bfloat16_generation_is_finite_and_keeps_input_dtype():
    net, head = make_wavenet(dtype="mixed_bfloat16")
    x0 = np.random.randn(2, 2).astype("float32")
    generated = jit(lambda: autoregressive_generate(net, head, x0, 4))()
    assert keras.backend.standardize_dtype(generated.dtype) == "float32"
    assert np.all(np.isfinite(to_numpy(generated)))
