"""AttentionPooling: reference, masks, precision, serialization, errors."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import AttentionPooling
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, T, D, U = 2, 6, 5, 4


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def np_attention_pooling(inputs, kernel, bias, context, mask=None):
    scores = np.tanh(inputs @ kernel + bias) @ context  # (B, T)
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    weights = np_softmax(scores)
    return np.einsum("bt,btd->bd", weights, inputs), weights


def test_standard_checks():
    output, weights = run_layer_test(
        AttentionPooling,
        {"units": U},
        random(B, T, D),
        expected_output_shape=(B, D),
        expected_num_trainable_weights=3,
        call_kwargs={"return_attention_scores": True},
        run_training=False,
    )
    assert tuple(weights.shape) == (B, T)
    run_layer_test(
        AttentionPooling,
        {"units": U},
        random(B, T, D),
        expected_output_shape=(B, D),
        run_mixed_precision=False,
    )


def test_matches_numpy_reference():
    layer = AttentionPooling(units=U)
    inputs = random(B, T, D)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
    layer(inputs)
    kernel, bias, context = random(D, U), random(U), random(U, 1)
    layer.set_weights([kernel, bias, context])
    output, weights = layer(inputs, mask=mask, return_attention_scores=True)
    expected, expected_weights = np_attention_pooling(
        inputs, kernel, bias, context[:, 0], mask
    )
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-5)


def test_small_case_by_hand():
    # units=1, kernel=1, bias=0, context=1: scores tanh(h) on a 1-D input.
    layer = AttentionPooling(units=1)
    inputs = np.array([[[0.0], [np.arctanh(np.log(3.0) / 2)]]], "float32")
    layer(inputs)
    layer.set_weights([np.ones((1, 1)), np.zeros(1), np.full((1, 1), 2.0)])
    # scores 0 and 2 * ln(3) / 2 = ln 3: weights 1/4 and 3/4.
    output, weights = layer(inputs, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), [[0.25, 0.75]], atol=1e-6)
    np.testing.assert_allclose(to_numpy(output), 0.75 * inputs[:, 1], atol=1e-6)


def test_masked_steps_do_not_change_output_and_full_mask_is_zero():
    layer = AttentionPooling(units=U)
    inputs = random(B, T, D)
    mask = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0]], bool)
    output, weights = layer(inputs, mask=mask, return_attention_scores=True)
    changed = np.where(mask[..., None], inputs, 100.0).astype("float32")
    output2 = layer(changed, mask=mask)
    np.testing.assert_allclose(to_numpy(output2), to_numpy(output), atol=1e-6)
    assert np.all(to_numpy(weights)[~mask] == 0)
    assert np.all(to_numpy(output)[1] == 0)
    assert np.all(np.isfinite(to_numpy(output)))


def test_implicit_mask_equals_explicit_and_is_consumed():
    tokens = np.array([[3, 1, 4, 0, 0, 0], [5, 9, 2, 6, 5, 0]], "int32")
    layer = AttentionPooling(units=U)
    inputs = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, D, mask_zero=True)
    pooled = layer(embedding(inputs))
    assert getattr(pooled, "_keras_mask", None) is None
    model = keras.Model(inputs, pooled)
    vectors = ops.take(embedding.embeddings, tokens, axis=0)
    expected = layer(vectors, mask=tokens != 0)
    np.testing.assert_allclose(
        to_numpy(model(tokens)), to_numpy(expected), atol=1e-6
    )


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_large_scores(policy):
    inputs = random(B, T, D)
    layers = {}
    for name in ("float32", policy):
        layers[name] = AttentionPooling(units=U, dtype=name)
        layers[name](inputs)
        # Saturated tanh times a large context: scores of about +-400.
        layers[name].set_weights(
            [np.full((D, U), 50.0), np.zeros(U), np.full((U, 1), 100.0)]
        )
    expected = to_numpy(layers["float32"](inputs))
    output = layers[policy](inputs)
    assert keras.backend.standardize_dtype(output.dtype) == policy[6:]
    output = to_numpy(ops.cast(output, "float32"))
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, expected, atol=3e-2)


def test_dropout_only_in_training():
    layer = AttentionPooling(units=U, dropout=0.5, seed=3)
    inputs = random(B, T, D)
    expected = to_numpy(layer(inputs))
    np.testing.assert_allclose(
        to_numpy(layer(inputs, training=False)), expected, atol=1e-6
    )
    assert not np.allclose(to_numpy(layer(inputs, training=True)), expected)


def test_model_round_trip(tmp_path):
    inputs = keras.Input((None, D))
    outputs = AttentionPooling(units=U, name="pooling")(inputs)
    model = keras.Model(inputs, outputs)
    loaded = assert_model_round_trip(model, random(B, T, D), tmp_path)
    assert isinstance(loaded.get_layer("pooling"), AttentionPooling)


@pytest.mark.parametrize(
    "kwargs, argument",
    [({"units": 0}, "units"), ({"units": 4, "dropout": 1.0}, "dropout")],
)
def test_invalid_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        AttentionPooling(**kwargs)


def test_invalid_input_rank():
    with pytest.raises(ValueError, match="inputs_shape"):
        AttentionPooling(units=U)(random(B, D))
