"""Helpers shared by the causal-convolution tests (conv, TCN, WaveNet)."""

import keras
import numpy as np
from keras import ops

BACKEND = keras.backend.backend()


def input_gradient(fn, inputs, t):
    """Gradient of `sum(fn(inputs)[:, t])` w.r.t. `inputs`, as NumPy.

    Args:
        fn: callable `(B, T, C) -> (B, T, F)` of keras ops.
        inputs: float32 array `(B, T, C)`.
        t: int, the output time step.

    Returns:
        Array `(B, T, C)`.
    """
    if BACKEND == "tensorflow":
        import tensorflow as tf

        x = tf.convert_to_tensor(inputs)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.cast(fn(x)[:, t], "float32"))
        return tape.gradient(loss, x).numpy()
    if BACKEND == "jax":
        import jax

        def loss(x):
            return ops.sum(ops.cast(fn(x)[:, t], "float32"))

        # One compiled gradient is faster than op-by-op tracing.
        return np.asarray(jax.jit(jax.grad(loss))(jax.numpy.asarray(inputs)))
    raise NotImplementedError(BACKEND)


def seen_steps(fn, inputs, t):
    """Input steps whose gradient into output `t` is nonzero (sorted)."""
    grad = input_gradient(fn, inputs, t)
    return np.nonzero(np.any(grad != 0, axis=(0, 2)))[0]


def np_causal_conv1d(x, kernel, bias, dilation_rate):
    """Left zero padding, then a valid dilated convolution."""
    size = kernel.shape[0]
    pad = dilation_rate * (size - 1)
    padded = np.pad(x, ((0, 0), (pad, 0), (0, 0)))
    out = sum(
        padded[:, dilation_rate * k : dilation_rate * k + x.shape[1]]
        @ kernel[k]
        for k in range(size)
    )
    return out + bias
