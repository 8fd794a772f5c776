"""`attention_zoo.export.batch_norm_folding`: a convolution and the batch
normalization after it as one convolution, checked against NumPy and
against the unfolded Keras model."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import batch_norm_folding


def _conv(x, kernel, depthwise):
    """NumPy 'valid' convolution, stride 1: `x` `(H, W, C)`, a Conv2D
    kernel `(kh, kw, C, out)` or a depthwise one `(kh, kw, C, m)`
    (output channel `c * m + j`)."""
    kh, kw = kernel.shape[:2]
    rows, cols = x.shape[0] - kh + 1, x.shape[1] - kw + 1
    if depthwise:
        channels, multiplier = kernel.shape[2:]
        out = np.zeros((rows, cols, channels * multiplier))
        for c in range(channels):
            for j in range(multiplier):
                for r in range(rows):
                    for s in range(cols):
                        patch = x[r : r + kh, s : s + kw, c]
                        out[r, s, c * multiplier + j] = np.sum(
                            patch * kernel[:, :, c, j]
                        )
        return out
    out = np.zeros((rows, cols, kernel.shape[3]))
    for r in range(rows):
        for s in range(cols):
            patch = x[r : r + kh, s : s + kw, :]
            out[r, s] = np.tensordot(patch, kernel, axes=3)
    return out


@pytest.mark.parametrize(
    "depthwise, with_bias, with_gamma, with_beta",
    [
        (False, False, True, True),
        (False, True, False, True),
        (True, False, True, False),
        (True, True, True, True),
    ],
    ids=["conv", "conv-bias-no-scale", "depthwise-no-center", "depthwise"],
)
def test_folded_convolution_is_convolution_then_normalization(
    depthwise, with_bias, with_gamma, with_beta
):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 6, 3))
    kernel = rng.standard_normal((3, 2, 3, 2 if depthwise else 4))
    out = 6 if depthwise else 4
    bias = rng.standard_normal(out) if with_bias else None
    gamma = rng.uniform(0.5, 2.0, out) if with_gamma else None
    beta = rng.standard_normal(out) if with_beta else None
    mean = rng.standard_normal(out)
    variance = rng.uniform(0.1, 3.0, out)
    epsilon = 1e-3

    y = _conv(x, kernel, depthwise) + (0 if bias is None else bias)
    expected = (y - mean) / np.sqrt(variance + epsilon)
    expected = expected * (1 if gamma is None else gamma)
    expected = expected + (0 if beta is None else beta)

    folded_kernel, folded_bias = batch_norm_folding.fold_batch_norm(
        kernel, bias, gamma, beta, mean, variance, epsilon, depthwise
    )
    assert folded_kernel.shape == kernel.shape
    assert folded_kernel.dtype == folded_bias.dtype == np.float32
    got = _conv(x, folded_kernel, depthwise) + folded_bias
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _model():
    """Conv -> BN -> ReLU6 and depthwise (strided) -> BN fold; a
    convolution with an activation, one read twice and a BN after an add
    do not."""
    inputs = keras.Input((12, 12, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", use_bias=False)(inputs)
    x = keras.layers.BatchNormalization(name="folds_conv")(x)
    x = keras.layers.ReLU(max_value=6.0)(x)
    x = keras.layers.DepthwiseConv2D(3, strides=2, padding="same")(x)
    x = keras.layers.BatchNormalization(name="folds_depthwise")(x)
    activated = keras.layers.Conv2D(8, 1, activation="relu")(x)
    x = keras.layers.BatchNormalization(name="after_activation")(activated)
    shared = keras.layers.Conv2D(8, 1)(x)
    x = keras.layers.BatchNormalization(name="after_shared")(shared)
    x = keras.layers.Add()([x, shared])
    x = keras.layers.BatchNormalization(name="after_add")(x)
    model = keras.Model(inputs, x)
    rng = np.random.default_rng(2)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            size = layer.moving_mean.shape[0]
            layer.set_weights(
                [
                    rng.uniform(0.5, 2.0, size),  # gamma
                    rng.standard_normal(size),  # beta
                    rng.standard_normal(size),  # moving mean
                    rng.uniform(0.2, 3.0, size),  # moving variance
                ]
            )
    return model


def _traced(model, x):
    """`model` at inference as a concrete graph function of `x`."""

    @tf.function
    def run(inputs):
        return model(inputs, training=False)

    return run.get_concrete_function(x)


def _square_roots(function):
    """How many `Rsqrt` ops a concrete function's graph has."""
    return [op.type for op in function.graph.get_operations()].count("Rsqrt")


def test_a_model_traced_with_folds_computes_what_it_did():
    model = _model()
    x = np.random.default_rng(3).standard_normal((2, 12, 12, 3))
    x = tf.constant(x, tf.float32)
    expected = model(x).numpy()
    unfolded = _square_roots(_traced(model, x))
    with batch_norm_folding.folded_batch_norms(model) as names:
        folded = _traced(model, x)
    assert sorted(names) == ["folds_conv", "folds_depthwise"]
    np.testing.assert_allclose(folded(x).numpy(), expected, atol=1e-4)
    # Each normalization left computes one reciprocal square root.
    assert _square_roots(folded) == unfolded - 2 == 3
    # The layers compute as before once the context is closed.
    assert not any("call" in vars(layer) for layer in model.layers)
    np.testing.assert_array_equal(model(x).numpy(), expected)


def test_only_a_linear_convolutions_sole_normalization_folds():
    model = _model()
    pairs = batch_norm_folding.fold_candidates(model)
    assert sorted(norm.name for _, norm in pairs) == [
        "folds_conv",
        "folds_depthwise",
    ]
    # The fold reads the weights as they are when the context opens.
    model.get_layer("folds_conv").moving_mean.assign(np.full(8, 5.0))
    x = tf.ones((1, 12, 12, 3))
    expected = model(x).numpy()
    with batch_norm_folding.folded_batch_norms(model):
        got = _traced(model, x)(x).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-4)
