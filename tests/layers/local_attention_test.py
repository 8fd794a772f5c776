"""LocalAttention: local-m and local-p against NumPy, windows, steps, masks."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import LocalAttention
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, TQ, TV, D, DV, U = 2, 4, 8, 5, 3, 6
SCORES = ("general", "dot", "scaled_dot", "additive")


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def make(mode="monotonic", score="general", window=2, **kwargs):
    if mode == "predictive" or score == "additive":
        kwargs.setdefault("units", U)
    return LocalAttention(window=window, mode=mode, score=score, **kwargs)


def set_random_weights(layer):
    values = {}
    for weight in layer.weights:
        values[weight.name] = random(*weight.shape)
        weight.assign(values[weight.name])
    return values


def np_scores(score, query, key, weights):
    if score == "additive":
        hidden = np.tanh(
            (query @ weights["query_kernel"])[:, :, None]
            + (key @ weights["key_kernel"] + weights["bias"])[:, None]
        )
        return hidden @ weights["v"][:, 0]
    if score == "general":
        return np.einsum("bqi,ij,btj->bqt", query, weights["kernel"], key)
    scores = np.einsum("bqd,btd->bqt", query, key)
    return scores / np.sqrt(D) if score == "scaled_dot" else scores


def np_aligned_positions(mode, query, source_length, weights, start=0):
    """Luong's p_t: `min(t, S - 1)` or `S sigmoid(v_p^T tanh(W_p h_t))`."""
    if mode == "monotonic":
        t = start + np.arange(query.shape[1])
        return np.minimum(t[None], source_length[:, None] - 1)
    hidden = np.tanh(query @ weights["position_kernel"])
    logits = (hidden @ weights["position_v"])[..., 0]
    return source_length[:, None] / (1 + np.exp(-logits))


def np_local_attention(scores, value, centre, window, mode, mask):
    """Softmax over `|s - p_t| <= D` (and the mask); local-p times the
    Gaussian with `sigma = D / 2`, not renormalised."""
    distance = np.arange(scores.shape[-1])[None, None] - centre[..., None]
    keep = (np.abs(distance) <= window) & mask[:, None]
    weights = np_softmax(np.where(keep, scores, -1e9)) * keep
    if mode == "predictive":
        weights = weights * np.exp(-(distance**2) / (2 * (window / 2) ** 2))
    return weights @ value, weights


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_matches_numpy_reference(mode, score):
    layer = make(mode, score)
    query, key, value = random(B, TQ, D), random(B, TV, D), random(B, TV, DV)
    # Sequence 1 is shorter than its queries: local-m clips p_t to S - 1.
    mask = np.array([[1] * TV, [1, 1, 1, 0, 0, 0, 0, 0]], bool)
    layer(query, value, key=key)
    weights = set_random_weights(layer)
    output, attention = layer(
        query, value, key=key, value_mask=mask, return_attention_scores=True
    )
    centre = np_aligned_positions(mode, query, mask.sum(-1), weights)
    expected, expected_attention = np_local_attention(
        np_scores(score, query, key, weights), value, centre, 2, mode, mask
    )
    np.testing.assert_allclose(
        to_numpy(attention), expected_attention, atol=1e-5
    )
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)


def test_small_case_by_hand():
    # Dot scores of a zero query are all 0: uniform over each window.
    # D = 1, S = 3 (position 3 masked): p_t = 0, 1, 2, 2 (clipped).
    layer = LocalAttention(window=1, score="dot")
    query = np.zeros((1, 4, 1), "float32")
    value = np.array([[[3.0], [6.0], [9.0], [100.0]]], "float32")
    mask = np.array([[1, 1, 1, 0]], bool)
    output, weights = layer(
        query, value, value_mask=mask, return_attention_scores=True
    )
    third = 1 / 3
    np.testing.assert_allclose(
        to_numpy(weights)[0],
        [
            [0.5, 0.5, 0, 0],
            [third, third, third, 0],
            [0, 0.5, 0.5, 0],
            [0, 0.5, 0.5, 0],
        ],
        atol=1e-6,
    )
    np.testing.assert_allclose(
        to_numpy(output)[0, :, 0], [4.5, 6.0, 7.5, 7.5], atol=1e-5
    )


@pytest.mark.parametrize("window", [1, 3])
@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_outside_the_window_is_exactly_zero(mode, window):
    layer = make(mode, window=window)
    query, value = random(B, TQ, D), random(B, 12, D)
    layer(query, value)
    weights = set_random_weights(layer)
    _, attention = layer(query, value, return_attention_scores=True)
    attention = to_numpy(attention)
    centre = np_aligned_positions(mode, query, np.full(B, 12), weights)
    distance = np.abs(np.arange(12)[None, None] - centre[..., None])
    assert np.all(attention[distance > window] == 0)
    assert np.all(attention[distance <= window] > 0)
    assert np.all((attention > 0).sum(-1) <= 2 * window + 1)


def test_predictive_weights_are_not_renormalised():
    layer = make("predictive", window=2)
    query, value = random(B, TQ, D), random(B, TV, D)
    _, attention = layer(query, value, return_attention_scores=True)
    sums = to_numpy(ops.sum(attention, -1))
    assert np.all(sums < 1) and np.all(sums > 0)


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_decoder_steps_equal_the_whole_sequence(mode):
    layer = make(mode, score="additive")
    query, value = random(B, TQ, D), random(B, TV, DV)
    mask = np.array([[1] * TV, [1, 1, 1, 1, 1, 0, 0, 0]], bool)
    output, attention = layer(
        query, value, value_mask=mask, return_attention_scores=True
    )

    def decode(query, value):
        def step(t, outputs):
            context = layer(
                ops.take(query, t, axis=1),
                value,
                value_mask=mask,
                start_index=t,
            )  # (B, dv)
            return ops.slice_update(
                outputs, (0, t, 0), ops.expand_dims(context, 1)
            )

        return ops.fori_loop(0, TQ, step, ops.zeros((B, TQ, DV)))

    np.testing.assert_allclose(
        to_numpy(jit(decode)(query, value)), to_numpy(output), atol=1e-5
    )
    for t in range(TQ):
        step, weights = layer(
            query[:, t],
            value,
            value_mask=mask,
            start_index=t,
            return_attention_scores=True,
        )
        assert tuple(weights.shape) == (B, TV)
        np.testing.assert_allclose(
            to_numpy(weights), to_numpy(attention)[:, t], atol=1e-6
        )


def test_start_index_shifts_local_m_windows():
    layer = make("monotonic", window=1)
    query, value = random(B, 6, D), random(B, TV, DV)
    expected = to_numpy(layer(query, value))
    shifted = layer(query[:, 2:5], value, start_index=2)
    np.testing.assert_allclose(to_numpy(shifted), expected[:, 2:5], atol=1e-6)
    per_example = layer(
        query[:, 2:3], value, start_index=np.array([2, 2], "int32")
    )
    np.testing.assert_allclose(
        to_numpy(per_example), expected[:, 2:3], atol=1e-6
    )


@pytest.mark.parametrize(
    "mode, score", [("monotonic", "general"), ("predictive", "additive")]
)
def test_standard_checks(mode, score):
    units = U if mode == "predictive" or score == "additive" else None
    run_layer_test(
        LocalAttention,
        {"window": 2, "mode": mode, "score": score, "units": units},
        {"query": random(B, TQ, D), "value": random(B, TV, D)},
        expected_output_shape=(B, TQ, D),
        expected_num_trainable_weights={"general": 1, "additive": 4}[score]
        + 2 * (mode == "predictive"),
    )


def test_standard_checks_with_key_and_scores():
    output, weights = run_layer_test(
        LocalAttention,
        {"window": 1, "mode": "monotonic", "score": "dot"},
        {
            "query": random(B, TQ, D),
            "value": random(B, TV, DV),
            "key": random(B, TV, D),
        },
        expected_output_shape=(B, TQ, DV),
        call_kwargs={"return_attention_scores": True},
        run_training=False,  # no weights
    )
    np.testing.assert_allclose(to_numpy(ops.sum(weights, -1)), 1, atol=1e-6)


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_masks(mode):
    layer = make(mode, dropout=0.0)
    query, value = random(B, TQ, D), random(B, TV, D)
    value_mask = np.array([[1, 0, 1, 1, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0, 0]])
    value_mask = value_mask.astype(bool)
    output, weights = layer(
        query, value, value_mask=value_mask, return_attention_scores=True
    )
    weights = to_numpy(weights)
    assert np.all(
        weights[np.broadcast_to(~value_mask[:, None], weights.shape)] == 0
    )
    changed = np.where(value_mask[..., None], value, 100.0).astype("float32")
    np.testing.assert_allclose(
        to_numpy(layer(query, changed, value_mask=value_mask)),
        to_numpy(output),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        to_numpy(layer(query, value, key_mask=value_mask)),
        to_numpy(output),
        atol=1e-6,
    )
    query_mask = np.array([[1, 1, 0, 1], [1, 0, 0, 0]], bool)
    empty = np.zeros((B, TV), bool)
    output, weights = layer(
        query,
        value,
        query_mask=query_mask,
        value_mask=empty,
        return_attention_scores=True,
    )
    assert np.all(to_numpy(output) == 0) and np.all(to_numpy(weights) == 0)
    output = to_numpy(layer(query, value, query_mask=query_mask))
    assert np.all(output[~query_mask] == 0)
    assert np.all(output[query_mask] != 0)


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


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_implicit_mask_equals_explicit_and_is_carried(mode):
    tokens = np.array([[3, 1, 4, 0, 0], [5, 9, 2, 6, 0]], "int32")
    layer = make(mode)
    implicit, embedding = _embedding_model(layer, implicit=True)
    explicit, other = _embedding_model(layer, implicit=False)
    other.set_weights(embedding.get_weights())
    expected = to_numpy(explicit(tokens))
    np.testing.assert_allclose(to_numpy(implicit(tokens)), expected, atol=1e-6)
    assert np.all(expected[tokens == 0] == 0)
    assert getattr(implicit.outputs[0], "_keras_mask", None) is not None


def test_model_round_trip(tmp_path):
    query = keras.Input((None, D), name="query")
    value = keras.Input((None, DV), name="value")
    layer = make("predictive", score="additive", name="local")
    model = keras.Model([query, value], layer(query, value))
    loaded = assert_model_round_trip(
        model, [random(B, TQ, D), random(B, TV, DV)], tmp_path
    )
    assert type(loaded.get_layer("local")) is LocalAttention


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_xla_with_masks_equals_eager(mode):
    layer = make(mode)
    query, value = random(B, TQ, D), random(B, TV, D)
    masks = {
        "query_mask": np.array([[1, 1, 0, 1], [1, 1, 1, 1]], bool),
        "value_mask": np.array([[1] * TV, [1, 1, 1, 1, 1, 0, 0, 0]], bool),
    }
    expected = to_numpy(layer(query, value, **masks))
    compiled = jit(lambda q, v: layer(q, v, **masks))
    np.testing.assert_allclose(
        to_numpy(compiled(query, value)), expected, atol=1e-5
    )


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_mixed_precision_close_to_float32(mode):
    # A long source: bfloat16 positions would be off by 2 past 256.
    query, value = random(1, 3, D), random(1, 300, D)
    # Inputs as bfloat16 rounds them, so both layers see the same ones.
    query = to_numpy(ops.cast(ops.cast(query, "bfloat16"), "float32"))
    layers = {}
    for policy in ("float32", "mixed_bfloat16"):
        layers[policy] = make(mode, window=4, dtype=policy)
        layers[policy](query, value)
    layers["mixed_bfloat16"].set_weights(layers["float32"].get_weights())
    args = {"start_index": 280, "return_attention_scores": True}
    expected = [to_numpy(x) for x in layers["float32"](query, value, **args)]
    output, weights = layers["mixed_bfloat16"](query, value, **args)
    assert keras.backend.standardize_dtype(output.dtype) == "bfloat16"
    weights = to_numpy(ops.cast(weights, "float32"))
    np.testing.assert_array_equal(weights > 0, expected[1] > 0)
    np.testing.assert_allclose(weights, expected[1], atol=2e-2)
    output = to_numpy(ops.cast(output, "float32"))
    np.testing.assert_allclose(output, expected[0], atol=5e-2)


def test_gradients_reach_the_position_network():
    layer = make("predictive", score="additive")
    query, value = random(B, TQ, D), random(B, TV, DV)
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


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"window": 0}, "window"),
        ({"window": 2.5}, "window"),
        ({"mode": "global"}, "mode"),
        ({"score": "location"}, "score"),
        ({"score": "additive", "units": 0}, "units"),
        ({"units": 4}, "units"),
        ({"dropout": 1.0}, "dropout"),
    ],
)
def test_invalid_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        LocalAttention(**kwargs)
