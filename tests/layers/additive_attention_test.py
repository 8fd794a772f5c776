"""AdditiveAttention: NumPy reference, precomputed keys, decoding, errors."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import AdditiveAttention
from tests.support.layer_checks import jit
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import to_numpy

B, TQ, TV, DQ, DK, DV, U = 2, 3, 5, 4, 6, 7, 8


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def np_additive_attention(query, key, value, wq, wk, b, v, g=None, mask=None):
    """Bahdanau: `softmax(v^T tanh(W_q q + W_k k + b)) @ value`."""
    if g is not None:
        v = g * v / np.sqrt(np.sum(v**2))
    hidden = np.tanh(
        (query @ wq)[:, :, None, :] + (key @ wk + b)[:, None, :, :]
    )  # (B, Tq, Tv, U)
    scores = np.einsum("bqtu,u->bqt", hidden, v)
    if mask is not None:
        scores = np.where(mask[:, None, :], scores, -1e9)
    weights = np_softmax(scores)
    return weights @ value, weights


def _set_random_weights(layer, normalize=False):
    weights = [random(DQ, U), random(DK, U), random(U), random(U, 1)]
    if normalize:
        weights.append(np.float32(0.7))
    layer.set_weights(weights)
    return weights


@pytest.mark.parametrize("normalize", [False, True])
def test_matches_numpy_reference(normalize):
    layer = AdditiveAttention(units=U, normalize=normalize)
    query, key, value = random(B, TQ, DQ), random(B, TV, DK), random(B, TV, DV)
    mask = np.array([[1, 1, 1, 1, 0], [1, 0, 1, 1, 1]], bool)
    layer(query, value, key=key)
    wq, wk, b, v, *g = _set_random_weights(layer, normalize)
    output, weights = layer(
        query, value, key=key, value_mask=mask, return_attention_scores=True
    )
    expected, expected_weights = np_additive_attention(
        query, key, value, wq, wk, b, v[:, 0], g[0] if g else None, mask
    )
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-5)


def test_small_case_by_hand():
    # One query, two keys, units=1: scores v*tanh(q*wq + k*wk + b).
    layer = AdditiveAttention(units=1)
    query = np.array([[[1.0]]], "float32")  # (1, 1, 1)
    key = np.array([[[0.0], [2.0]]], "float32")  # (1, 2, 1)
    value = np.array([[[10.0], [20.0]]], "float32")
    layer(query, value, key=key)
    layer.set_weights(
        [np.array(w, "float32") for w in ([[1]], [[-1]], [0], [[2]])]
    )
    # scores: 2*tanh(1 - 0) = 1.5232, 2*tanh(1 - 2) = -1.5232
    # weights: sigmoid(3.0464) = 0.954626 and 0.045374
    output, weights = layer(query, value, key=key, return_attention_scores=True)
    np.testing.assert_allclose(
        to_numpy(weights), [[[0.954626, 0.045374]]], atol=1e-5
    )
    np.testing.assert_allclose(to_numpy(output), [[[10.45374]]], atol=1e-4)


def test_normalized_scale_starts_at_sqrt_inverse_units():
    layer = AdditiveAttention(units=U, normalize=True)
    layer(random(B, TQ, DQ), random(B, TV, DV))
    np.testing.assert_allclose(to_numpy(layer.g), np.sqrt(1 / U), rtol=1e-6)
    names = sorted(w.name for w in layer.trainable_weights)
    assert names == ["bias", "g", "key_kernel", "query_kernel", "v"]


def test_no_bias_has_no_bias_weight():
    layer = AdditiveAttention(units=U, use_bias=False)
    layer(random(B, TQ, DQ), random(B, TV, DV))
    assert len(layer.trainable_weights) == 3


@pytest.mark.parametrize("normalize", [False, True])
def test_precomputed_keys_equal_recomputed(normalize):
    layer = AdditiveAttention(units=U, normalize=normalize)
    query, key, value = random(B, TQ, DQ), random(B, TV, DK), random(B, TV, DV)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    expected = layer(query, value, key=key, value_mask=mask)
    projected = layer.precompute_keys(key)
    assert tuple(projected.shape) == (B, TV, U)
    output = layer.attend(query, projected, value, value_mask=mask)
    np.testing.assert_allclose(to_numpy(output), to_numpy(expected), atol=0)
    # One decoder step with a 2-D query.
    step = layer.attend(query[:, 1], projected, value, value_mask=mask)
    np.testing.assert_allclose(
        to_numpy(step), to_numpy(expected)[:, 1], atol=1e-6
    )


def test_precomputed_keys_in_compiled_decoding_loop():
    layer = AdditiveAttention(units=U)
    query, key, value = random(B, TQ, DQ), random(B, TV, DK), random(B, TV, DV)
    expected = to_numpy(layer(query, value, key=key))

    def decode(query, key, value):
        projected = layer.precompute_keys(key)  # once, outside the loop

        def step(i, outputs):
            q = ops.take(query, i, axis=1)  # (B, DQ)
            context = layer.attend(q, projected, value)  # (B, DV)
            return ops.slice_update(
                outputs, (0, i, 0), ops.expand_dims(context, 1)
            )

        outputs = ops.zeros((B, TQ, DV), "float32")
        return ops.fori_loop(0, TQ, step, outputs)

    output = jit(decode)(query, key, value)
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)


def test_precomputed_keys_under_mixed_precision():
    layer = AdditiveAttention(units=U, dtype="mixed_bfloat16")
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    expected = layer(query, value)
    projected = layer.precompute_keys(value)
    assert keras.backend.standardize_dtype(projected.dtype) == "bfloat16"
    output = layer.attend(query, projected, value)
    assert keras.backend.standardize_dtype(output.dtype) == "bfloat16"
    np.testing.assert_allclose(
        to_numpy(ops.cast(output, "float32")),
        to_numpy(ops.cast(expected, "float32")),
        atol=1e-2,
    )


def test_gradients_reach_every_weight():
    layer = AdditiveAttention(units=U, normalize=True)
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    layer(query, value)
    target = random(B, TQ, DV)

    def loss_fn(weights):
        output, _ = layer.stateless_call(weights, [], query, value)
        return ops.mean(ops.square(output - target))

    if keras.backend.backend() == "jax":
        import jax

        grads = jax.grad(loss_fn)([w.value for w in layer.trainable_weights])
    else:
        import tensorflow as tf

        weights = [tf.Variable(w.value) for w in layer.trainable_weights]
        with tf.GradientTape() as tape:
            loss = loss_fn(weights)
        grads = tape.gradient(loss, weights)
    for grad, weight in zip(grads, layer.trainable_weights):
        assert np.any(to_numpy(grad) != 0), weight.name


@pytest.mark.parametrize("units", [0, -3, 2.5, None])
def test_invalid_units(units):
    with pytest.raises(ValueError, match="units"):
        AdditiveAttention(units=units)
