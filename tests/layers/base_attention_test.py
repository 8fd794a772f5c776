"""Behaviour shared by every `BaseAttention` subclass: masks, shapes, I/O."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import AdditiveAttention
from attention_zoo.layers import BaseAttention
from attention_zoo.layers import BilinearAttention
from attention_zoo.layers import KernelRegressionAttention
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, TQ, TV, D = 2, 3, 5, 4

LAYERS = {
    "additive": (AdditiveAttention, {"units": 6}),
    "bilinear": (BilinearAttention, {"score": "general"}),
    "kernel": (KernelRegressionAttention, {"bandwidth": 2.0}),
}


@pytest.fixture(params=sorted(LAYERS))
def make_layer(request):
    cls, kwargs = LAYERS[request.param]

    def make(**extra):
        return cls(**kwargs, **extra)

    make.cls, make.kwargs = cls, kwargs
    return make


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def test_standard_checks(make_layer):
    inputs = {"query": random(B, TQ, D), "value": random(B, TV, D)}
    run_layer_test(
        make_layer.cls,
        make_layer.kwargs,
        inputs,
        expected_output_shape=(B, TQ, D),
    )


def test_standard_checks_with_key_and_scores(make_layer):
    inputs = {
        "query": random(B, TQ, D),
        "value": random(B, TV, 3),
        "key": random(B, TV, D),
    }
    output, weights = run_layer_test(
        make_layer.cls,
        make_layer.kwargs,
        inputs,
        expected_output_shape=(B, TQ, 3),
        call_kwargs={"return_attention_scores": True},
        run_training=False,
        run_mixed_precision=False,
    )
    assert tuple(weights.shape) == (B, TQ, TV)
    np.testing.assert_allclose(to_numpy(ops.sum(weights, -1)), 1, atol=1e-6)


def test_symbolic_scores_spec(make_layer):
    query = keras.Input((None, D))
    value = keras.Input((None, 3))
    output, weights = make_layer()(
        query, value, key=keras.Input((None, D)), return_attention_scores=True
    )
    assert tuple(output.shape) == (None, None, 3)
    assert tuple(weights.shape) == (None, None, None)


def test_masked_values_do_not_change_output(make_layer):
    layer = make_layer()
    query, value = random(B, TQ, D), random(B, TV, D)
    value_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], bool)
    output, weights = layer(
        query, value, value_mask=value_mask, return_attention_scores=True
    )
    changed = np.where(value_mask[..., None], value, 100.0).astype("float32")
    output2 = layer(query, changed, value_mask=value_mask)
    np.testing.assert_allclose(to_numpy(output2), to_numpy(output), atol=1e-6)
    weights = to_numpy(weights)
    assert np.all(
        weights[~np.broadcast_to(value_mask[:, None], weights.shape)] == 0
    )
    # key_mask has the same effect as value_mask.
    output3 = layer(query, value, key_mask=value_mask)
    np.testing.assert_allclose(to_numpy(output3), to_numpy(output), atol=1e-6)


def test_attention_mask_hides_pairs(make_layer):
    layer = make_layer()
    query, value = random(B, TQ, D), random(B, TV, D)
    attention_mask = np.random.rand(B, TQ, TV) > 0.4
    attention_mask[..., 0] = True
    _, weights = layer(
        query,
        value,
        attention_mask=attention_mask,
        return_attention_scores=True,
    )
    weights = to_numpy(weights)
    assert np.all(weights[~attention_mask] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-6)


def test_causal_mask_ignores_the_future(make_layer):
    layer = make_layer()
    x = random(B, TV, D)
    output, weights = layer(
        x, x, use_causal_mask=True, return_attention_scores=True
    )
    assert np.all(np.triu(to_numpy(weights)[0], k=1) == 0)
    changed = x.copy()
    changed[:, 3:] = 50.0
    output2 = layer(changed, changed, use_causal_mask=True)
    np.testing.assert_allclose(
        to_numpy(output2)[:, :3], to_numpy(output)[:, :3], atol=1e-6
    )


def test_masked_queries_are_zero_and_fully_masked_rows_finite(make_layer):
    layer = make_layer()
    query, value = random(B, TQ, D), random(B, TV, D)
    query_mask = np.array([[1, 1, 0], [1, 0, 0]], bool)
    value_mask = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], bool)
    output, weights = layer(
        query,
        value,
        query_mask=query_mask,
        value_mask=value_mask,
        return_attention_scores=True,
    )
    output, weights = to_numpy(output), to_numpy(weights)
    assert np.all(np.isfinite(output)) and np.all(np.isfinite(weights))
    assert np.all(output[~query_mask] == 0)
    assert np.all(weights[~query_mask] == 0)
    # Second sequence: every value is masked.
    assert np.all(output[1] == 0) and np.all(weights[1] == 0)


def _embedding_model(layer, implicit):
    tokens = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, D, mask_zero=implicit)
    x = embedding(tokens)
    if implicit:
        output = layer(x, x)
    else:
        mask = keras.layers.Identity()(tokens) != 0
        output = layer(x, x, query_mask=mask, value_mask=mask)
    return keras.Model(tokens, output), embedding


def test_implicit_mask_equals_explicit_mask(make_layer):
    tokens = np.array([[3, 1, 4, 0, 0], [5, 9, 2, 6, 0]], "int32")
    layer = make_layer()
    implicit, embedding = _embedding_model(layer, implicit=True)
    explicit, other = _embedding_model(layer, implicit=False)
    other.set_weights(embedding.get_weights())
    expected = to_numpy(explicit(tokens))
    np.testing.assert_allclose(to_numpy(implicit(tokens)), expected, atol=1e-6)
    assert np.all(expected[tokens == 0] == 0)


def test_output_carries_query_mask(make_layer):
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, D, mask_zero=True)(tokens)
    value = keras.Input((None, D))
    output = make_layer()(x, value)
    assert getattr(output, "_keras_mask", None) is not None


# KernelRegressionAttention reads a 2-D query as scalar inputs (own tests).
@pytest.mark.parametrize("name", ["additive", "bilinear"])
def test_single_query_matches_first_row(name):
    cls, kwargs = LAYERS[name]
    layer = cls(**kwargs)
    query, value = random(B, D), random(B, TV, D)
    value_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    output, weights = layer(
        query, value, value_mask=value_mask, return_attention_scores=True
    )
    assert tuple(output.shape) == (B, D) and tuple(weights.shape) == (B, TV)
    expected = layer(query[:, None], value, value_mask=value_mask)
    np.testing.assert_allclose(
        to_numpy(output), to_numpy(expected)[:, 0], atol=1e-6
    )


def test_dropout_only_in_training(make_layer):
    layer = make_layer(dropout=0.5, seed=1)
    reference = make_layer()
    query, value = random(B, TQ, D), random(B, TV, D)
    reference(query, value)
    layer(query, value)
    layer.set_weights(reference.get_weights())
    expected = to_numpy(reference(query, value))
    np.testing.assert_allclose(
        to_numpy(layer(query, value, training=False)), expected, atol=1e-6
    )
    output, weights = layer(
        query, value, training=True, return_attention_scores=True
    )
    assert not np.allclose(to_numpy(output), expected, atol=1e-4)
    # The weights returned are the ones before dropout.
    np.testing.assert_allclose(to_numpy(ops.sum(weights, -1)), 1, atol=1e-6)


def _large_score_weights(layer):
    """Weights making scores large, with one best key per query."""
    if isinstance(layer, AdditiveAttention):
        eye = np.eye(D, dtype="float32")
        return [eye, eye, np.zeros(D, "float32"), -50 * np.ones((D, 1))]
    return [
        np.ones_like(w) if w.ndim == 0 else np.eye(D) * 10
        for w in layer.get_weights()
    ]


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_large_scores(make_layer, policy):
    kwargs = dict(make_layer.kwargs)
    if make_layer.cls is AdditiveAttention:
        kwargs["units"] = D
    value = np.tile(10 * np.eye(D, dtype="float32"), (B, 1, 1))  # (B, D, D)
    query = value[:, ::-1]
    targets = random(B, D, 3)
    layers = {}
    for name in ("float32", policy):
        layer = make_layer.cls(**kwargs, dtype=name)
        layer(query, targets, key=value)
        layer.set_weights(_large_score_weights(layer))
        layers[name] = layer
    expected = to_numpy(layers["float32"](query, targets, key=value))
    output = layers[policy](query, targets, key=value)
    assert keras.backend.standardize_dtype(output.dtype) == policy[6:]
    output = to_numpy(ops.cast(output, "float32"))
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, expected, atol=3e-2)


def test_model_round_trip(make_layer, tmp_path):
    query = keras.Input((None, D), name="query")
    value = keras.Input((None, 3), name="value")
    key = keras.Input((None, D), name="key")
    output = make_layer(name="attention")(query, value, key=key)
    model = keras.Model([query, value, key], output)
    inputs = [random(B, TQ, D), random(B, TV, 3), random(B, TV, D)]
    loaded = assert_model_round_trip(model, inputs, tmp_path)
    assert type(loaded.get_layer("attention")) is make_layer.cls


def test_xla_with_masks(make_layer):
    layer = make_layer()
    query, value = random(B, TQ, D), random(B, TV, D)
    masks = {
        "query_mask": np.array([[1, 1, 0], [1, 1, 1]], bool),
        "value_mask": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool),
        "use_causal_mask": True,
    }
    expected = to_numpy(layer(query, value, **masks))
    compiled = jit(lambda q, v: layer(q, v, **masks))
    np.testing.assert_allclose(
        to_numpy(compiled(query, value)), expected, atol=1e-5
    )


def test_base_needs_score():
    with pytest.raises(NotImplementedError, match="_score"):
        BaseAttention()(random(B, TQ, D), random(B, TV, D))


@pytest.mark.parametrize("dropout", [-0.1, 1.0])
def test_invalid_dropout(make_layer, dropout):
    with pytest.raises(ValueError, match="dropout"):
        make_layer(dropout=dropout)


def test_attend_needs_built_layer(make_layer):
    with pytest.raises(ValueError, match="built"):
        make_layer().precompute_keys(random(B, TV, D))
