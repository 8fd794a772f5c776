import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import MultiHead
from attention_zoo.layers import multi_head_kernels
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, TQ, TV, DQ, DV, H, DK = 2, 4, 6, 8, 6, 2, 3


def np_multi_head(query, value, key, weights, mask=None, query_mask=None):
    """NumPy reference. `weights` in the layer's order; `mask` (B, Tq, Tv)."""
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    q = np.einsum("btd,dhk->bthk", query, wq) + bq
    k = np.einsum("btd,dhk->bthk", key, wk) + bk
    v = np.einsum("btd,dhk->bthk", value, wv) + bv
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask[:, None], scores, -1e9)
    probs = np_softmax(scores)
    if mask is not None:
        probs = probs * mask[:, None]
    context = np.einsum("bhqk,bkhd->bqhd", probs, v)
    out = np.einsum("bqhd,hdo->bqo", context, wo) + bo
    if query_mask is not None:
        out = out * query_mask[..., None]
        probs = probs * query_mask[:, None, :, None]
    return out, probs


def random_weights(layer, scale=0.5):
    weights = [
        np.random.normal(size=w.shape).astype("float32") * scale
        for w in layer.weights
    ]
    layer.set_weights(weights)
    return weights


def make_data(tq=TQ, tv=TV):
    query = np.random.normal(size=(B, tq, DQ)).astype("float32")
    value = np.random.normal(size=(B, tv, DV)).astype("float32")
    return query, value


def built_layer(self_attention=False, **kwargs):
    layer = MultiHead(num_heads=H, key_dim=DK, **kwargs)
    query, value = make_data()
    if self_attention:
        value = query
    layer(query, value)
    return layer, random_weights(layer), query, value


@pytest.mark.parametrize(
    "init_kwargs, inputs, call_kwargs, shape",
    [
        ({}, {"query": (B, TQ, DQ), "value": (B, TV, DV)}, {}, (B, TQ, DQ)),
        (
            {"value_dim": 5, "output_dim": 7, "use_bias": False},
            {"query": (B, TQ, DQ), "value": (B, TV, DV), "key": (B, TV, 4)},
            {},
            (B, TQ, 7),
        ),
        ({}, {"query": (B, DQ), "value": (B, TV, DV)}, {}, (B, DQ)),
        (
            {"dropout": 0.3, "seed": 1},
            {"query": (B, TQ, DQ), "value": (B, TQ, DQ)},
            {"use_causal_mask": True, "return_attention_scores": True},
            (B, TQ, DQ),
        ),
    ],
    ids=["self_shapes", "cross_no_bias", "query_2d", "causal_scores"],
)
def test_layer_harness(init_kwargs, inputs, call_kwargs, shape):
    data = {
        k: np.random.normal(size=s).astype("float32") for k, s in inputs.items()
    }
    num_weights = 4 if init_kwargs.get("use_bias") is False else 8
    run_layer_test(
        MultiHead,
        {"num_heads": H, "key_dim": DK, **init_kwargs},
        data,
        shape,
        expected_num_trainable_weights=num_weights,
        call_kwargs=call_kwargs,
    )


@pytest.mark.parametrize("return_scores", [False, True])
@pytest.mark.parametrize("separate_key", [False, True])
def test_matches_numpy_reference(return_scores, separate_key):
    layer = MultiHead(num_heads=H, key_dim=DK, value_dim=4, output_dim=5)
    query, value = make_data()
    key = np.random.normal(size=(B, TV, 7)).astype("float32")
    key = key if separate_key else None
    layer(query, value, key=key)
    weights = random_weights(layer)
    out = layer(query, value, key=key, return_attention_scores=return_scores)
    expected, probs = np_multi_head(
        query, value, value if key is None else key, weights
    )
    if return_scores:
        out, scores = out
        np.testing.assert_allclose(to_numpy(scores), probs, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)


def test_2d_query_equals_one_step_query():
    layer, weights, query, value = built_layer()
    out, scores = layer(query[:, 0], value, return_attention_scores=True)
    expected, probs = np_multi_head(query[:, :1], value, value, weights)
    assert tuple(out.shape) == (B, DQ)
    np.testing.assert_allclose(to_numpy(out), expected[:, 0], atol=1e-5)
    np.testing.assert_allclose(to_numpy(scores), probs, atol=1e-5)


def test_symbolic_call_with_cache_and_scores():
    layer = MultiHead(num_heads=H, key_dim=DK)
    step = keras.Input((1, DQ))
    cache = keras.Input((2, 7, H, DK))
    out, scores, new_cache = layer(
        step,
        step,
        cache=cache,
        cache_update_index=3,
        return_attention_scores=True,
    )
    assert tuple(out.shape) == (None, 1, DQ)
    assert tuple(scores.shape) == (None, H, 1, 7)
    assert tuple(new_cache.shape) == (None, 2, 7, H, DK)


def test_hand_checkable_case():
    # One head of width 1, identity projections, no biases: the score of key
    # j is q * k_j, here [0, ln 3], so the weights are [1/4, 3/4] and the
    # output 3/4 * ln 3.
    layer = MultiHead(num_heads=1, key_dim=1, use_bias=False)
    query = np.array([[[1.0]]], "float32")
    value = np.array([[[0.0], [np.log(3.0)]]], "float32")
    layer(query, value)
    layer.set_weights([np.ones((1, 1, 1), "float32")] * 4)
    out, weights = layer(query, value, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), [[[[0.25, 0.75]]]], 1e-6)
    np.testing.assert_allclose(to_numpy(out), [[[0.75 * np.log(3.0)]]], 1e-6)


@pytest.fixture
def fused_kernel(monkeypatch):
    """Forces `ops.dot_product_attention` where weights are not needed.

    On CPU under TensorFlow the layer otherwise always takes the explicit
    path, which would leave the kernel path untested here.
    """
    monkeypatch.setattr(
        multi_head_kernels, "fused_kernel_is_faster", lambda: True
    )


def make_masks():
    value_mask = np.ones((B, TV), bool)
    value_mask[0, 4:] = False
    attention_mask = np.random.uniform(size=(B, TQ, TV)) > 0.3
    attention_mask[:, :, 0] = True
    query_mask = np.array([[1, 1, 1, 0], [1, 0, 1, 1]], bool)
    return value_mask, attention_mask, query_mask


MASK_CASES = ["value", "key", "attention", "causal", "query", "all"]


def mask_arguments(case):
    """Call kwargs and the equivalent (B, Tq, Tv) mask and query mask."""
    value_mask, attention_mask, query_mask = make_masks()
    causal = np.tril(np.ones((TQ, TV), bool), TV - TQ)[None]
    full = np.ones((B, TQ, TV), bool)
    cases = {
        "value": ({"value_mask": value_mask}, full & value_mask[:, None]),
        "key": ({"key_mask": value_mask}, full & value_mask[:, None]),
        "attention": ({"attention_mask": attention_mask}, attention_mask),
        "causal": ({"use_causal_mask": True}, full & causal),
        "query": ({"query_mask": query_mask}, full),
        "all": (
            {
                "value_mask": value_mask,
                "attention_mask": attention_mask,
                "use_causal_mask": True,
                "query_mask": query_mask,
            },
            attention_mask & value_mask[:, None] & causal,
        ),
    }
    kwargs, mask = cases[case]
    return kwargs, mask, kwargs.get("query_mask")


@pytest.mark.parametrize("return_scores", [False, True])
@pytest.mark.parametrize("case", MASK_CASES)
def test_masks_match_numpy_reference(case, return_scores):
    layer, weights, query, value = built_layer()
    kwargs, mask, query_mask = mask_arguments(case)
    expected, probs = np_multi_head(
        query, value, value, weights, mask, query_mask
    )
    out = layer(query, value, return_attention_scores=return_scores, **kwargs)
    if return_scores:
        out, scores = out
        np.testing.assert_allclose(to_numpy(scores), probs, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)


@pytest.mark.parametrize("case", MASK_CASES)
def test_fast_path_equals_explicit_path(case, fused_kernel):
    layer, _, query, value = built_layer()
    kwargs, _, _ = mask_arguments(case)
    fast = layer(query, value, **kwargs)
    explicit, _ = layer(query, value, return_attention_scores=True, **kwargs)
    np.testing.assert_allclose(to_numpy(fast), to_numpy(explicit), atol=1e-5)


def test_self_attention_causal_fast_kernel_equals_explicit(fused_kernel):
    # `query is value` with only a causal mask takes `is_causal=True`.
    layer, _, query, _ = built_layer(self_attention=True)
    fast = layer(query, query, use_causal_mask=True)
    explicit, _ = layer(
        query, query, use_causal_mask=True, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(fast), to_numpy(explicit), atol=1e-5)


def test_masked_values_do_not_change_output():
    layer, _, query, value = built_layer()
    value_mask, _, _ = make_masks()
    changed = np.where(value_mask[..., None], value, 100.0).astype("float32")
    for scores in (False, True):
        a = layer(
            query, value, value_mask=value_mask, return_attention_scores=scores
        )
        b = layer(
            query,
            changed,
            value_mask=value_mask,
            return_attention_scores=scores,
        )
        a, b = (to_numpy(a), to_numpy(b)) if scores else ([a], [b])
        for x, y in zip(a, b):
            np.testing.assert_allclose(to_numpy(x), to_numpy(y), atol=1e-6)


@pytest.mark.parametrize("return_scores", [False, True])
def test_fully_masked_rows_are_finite_and_zero(return_scores, fused_kernel):
    layer, _, query, value = built_layer(bias_initializer="zeros")
    layer._output_bias.assign(np.zeros_like(to_numpy(layer._output_bias)))
    value_mask = np.ones((B, TV), bool)
    value_mask[1] = False
    attention_mask = np.ones((B, TQ, TV), bool)
    attention_mask[0, 2] = False
    out = layer(
        query,
        value,
        value_mask=value_mask,
        attention_mask=attention_mask,
        return_attention_scores=return_scores,
    )
    if return_scores:
        out, scores = to_numpy(out)
        np.testing.assert_array_equal(scores[1], 0.0)
        np.testing.assert_array_equal(scores[0, :, 2], 0.0)
    out = to_numpy(out)
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_array_equal(out[0, 2], 0.0)
    assert np.abs(out[0, [0, 1, 3]]).min() > 0


def test_implicit_embedding_masks_equal_explicit_masks():
    ids_q = np.array([[3, 1, 2, 0], [4, 0, 0, 0]])
    ids_v = np.array([[1, 2, 3, 4, 0, 0], [5, 6, 0, 0, 0, 0]])
    embed = keras.layers.Embedding(10, DQ, mask_zero=True)
    layer = MultiHead(num_heads=H, key_dim=DK)
    implicit = layer(embed(ids_q), embed(ids_v))
    np.testing.assert_array_equal(to_numpy(implicit._keras_mask), ids_q != 0)
    plain = keras.layers.Embedding(10, DQ)
    plain.build((None,))
    plain.set_weights(embed.get_weights())
    explicit = layer(
        plain(ids_q),
        plain(ids_v),
        query_mask=ids_q != 0,
        value_mask=ids_v != 0,
    )
    np.testing.assert_allclose(to_numpy(implicit), to_numpy(explicit), 1e-6)
    np.testing.assert_array_equal(to_numpy(implicit)[1, 1:], 0.0)


def test_functional_model_carries_query_mask_and_round_trips(tmp_path):
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, DQ, mask_zero=True)(ids)
    y = MultiHead(num_heads=H, key_dim=DK)(x, x, use_causal_mask=True)
    pooled = keras.layers.GlobalAveragePooling1D()(y)  # uses the mask
    model = keras.Model(ids, [y, pooled])
    data = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]])
    out, pooled = model(data)
    np.testing.assert_array_equal(to_numpy(out)[0, 3:], 0.0)
    mean = to_numpy(out)[0, :3].mean(0)
    np.testing.assert_allclose(to_numpy(pooled)[0], mean, atol=1e-6)
    assert_model_round_trip(model, data, tmp_path)


def decode_self_attention(layer, x):
    """Feeds `x` one step at a time through a compiled `fori_loop`."""
    batch, length, width = x.shape

    def body(i, state):
        cache, outputs = state
        step = ops.slice(x, [0, i, 0], [batch, 1, width])
        out, cache = layer(step, step, cache=cache, cache_update_index=i)
        outputs = ops.slice_update(outputs, [0, i, 0], out)
        return cache, outputs

    cache = layer.get_initial_cache(batch, length)
    outputs = ops.zeros(
        (batch, length, layer.output_dim or width), layer.compute_dtype
    )
    return jit(lambda: ops.fori_loop(0, length, body, (cache, outputs)))()


@pytest.mark.parametrize("fused", [False, True])
def test_cache_self_attention_equals_full_causal_pass(fused, monkeypatch):
    monkeypatch.setattr(
        multi_head_kernels, "fused_kernel_is_faster", lambda: fused
    )
    layer, _, query, _ = built_layer(self_attention=True)
    full = layer(query, query, use_causal_mask=True)
    cache, decoded = decode_self_attention(layer, ops.convert_to_tensor(query))
    np.testing.assert_allclose(to_numpy(decoded), to_numpy(full), atol=1e-5)
    # The final cache holds the projections of every step.
    expected = to_numpy(layer.compute_cache(query))
    np.testing.assert_allclose(to_numpy(cache), expected, atol=1e-5)


def test_cache_decoding_in_mixed_precision():
    # The cache stays in bfloat16, so the loop's carry keeps its dtype.
    query, _ = make_data()
    layer = MultiHead(num_heads=H, key_dim=DK, dtype="mixed_bfloat16")
    full = layer(query, query, use_causal_mask=True)
    cache, decoded = decode_self_attention(layer, ops.convert_to_tensor(query))
    assert keras.backend.standardize_dtype(cache.dtype) == "bfloat16"
    np.testing.assert_allclose(
        to_numpy(ops.cast(decoded, "float32")),
        to_numpy(ops.cast(full, "float32")),
        atol=0.05,
    )


def test_cache_block_update_and_scores():
    # Two steps at once after a prefix of two: a block of queries.
    layer, _, query, _ = built_layer(self_attention=True)
    full, full_scores = layer(
        query, query, use_causal_mask=True, return_attention_scores=True
    )
    cache = layer.get_initial_cache(B, TQ)
    _, cache = layer(
        query[:, :2], query[:, :2], cache=cache, cache_update_index=0
    )
    out, scores, cache = layer(
        query[:, 2:],
        query[:, 2:],
        cache=cache,
        cache_update_index=2,
        return_attention_scores=True,
    )
    np.testing.assert_allclose(to_numpy(out), to_numpy(full)[:, 2:], 1e-5)
    np.testing.assert_allclose(
        to_numpy(scores), to_numpy(full_scores)[:, :, 2:], atol=1e-6
    )


@pytest.mark.parametrize("fused", [False, True])
def test_cache_cross_attention_equals_full_pass(fused, monkeypatch):
    monkeypatch.setattr(
        multi_head_kernels, "fused_kernel_is_faster", lambda: fused
    )
    layer, _, query, value = built_layer()
    value_mask, _, _ = make_masks()
    full = layer(query, value, value_mask=value_mask)
    cache = layer.compute_cache(value)
    query = ops.convert_to_tensor(query)

    def body(i, outputs):
        step = ops.slice(query, [0, i, 0], [B, 1, DQ])
        out, _ = layer(
            step,
            step,
            value_mask=value_mask,
            cache=cache,
            cache_update_index=None,
        )
        return ops.slice_update(outputs, [0, i, 0], out)

    decoded = jit(lambda: ops.fori_loop(0, TQ, body, ops.zeros((B, TQ, DQ))))()
    np.testing.assert_allclose(to_numpy(decoded), to_numpy(full), atol=1e-5)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("return_scores", [False, True])
def test_mixed_precision_with_large_scores(
    return_scores, fused, policy, monkeypatch
):
    monkeypatch.setattr(
        multi_head_kernels, "fused_kernel_is_faster", lambda: fused
    )
    query, value = make_data()
    reference = MultiHead(num_heads=H, key_dim=DK)
    reference(query, value)
    weights = random_weights(reference, scale=10.0)  # scores ~ 1e4
    mixed = MultiHead(num_heads=H, key_dim=DK, dtype=policy)
    mixed(query, value)
    mixed.set_weights(weights)
    kwargs = {"use_causal_mask": True, "return_attention_scores": return_scores}
    expected = to_numpy(reference(query, value, **kwargs))
    actual = mixed(query, value, **kwargs)
    if not return_scores:
        expected, actual = [expected], [actual]
    for e, a in zip(expected, actual):
        a = to_numpy(ops.cast(a, "float32"))
        assert np.all(np.isfinite(a))
        # Near-ties between huge scores may flip in 16 bits: most agree.
        scale = np.abs(e).max()
        close = np.isclose(a, e, rtol=0.05, atol=0.02 * scale)
        assert close.mean() > 0.9


def test_dropout_only_in_training():
    layer, _, query, value = built_layer(dropout=0.5, seed=3)
    inference = layer(query, value)
    _, scores = layer(query, value, return_attention_scores=True)
    fast = to_numpy(layer(query, value, training=False))
    np.testing.assert_allclose(fast, to_numpy(inference), atol=1e-6)
    trained = to_numpy(layer(query, value, training=True))
    assert not np.allclose(trained, fast, atol=1e-4)
    assert np.all(np.isfinite(to_numpy(scores)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_heads": 0, "key_dim": 2}, "num_heads"),
        ({"num_heads": 2, "key_dim": 0}, "key_dim"),
        ({"num_heads": 2, "key_dim": 2, "value_dim": -1}, "value_dim"),
        ({"num_heads": 2, "key_dim": 2, "output_dim": 1.5}, "output_dim"),
        ({"num_heads": 2, "key_dim": 2, "dropout": 1.5}, "dropout"),
    ],
)
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MultiHead(**kwargs)


def test_call_errors():
    layer = MultiHead(num_heads=H, key_dim=DK)
    query, value = make_data()
    with pytest.raises(ValueError, match="same length"):
        layer(query, value, key=value[:, :3])
    with pytest.raises(ValueError, match="query"):
        MultiHead(num_heads=H, key_dim=DK)(query[..., None], value)
    layer(query, value)
    with pytest.raises(ValueError, match="value"):
        layer(query, query)
    with pytest.raises(ValueError, match="cache_update_index"):
        layer(query, value, cache_update_index=0)
    with pytest.raises(ValueError, match="cache"):
        layer(
            query,
            value,
            cache=np.zeros((B, 2, 5, H, DK + 1)),
            cache_update_index=0,
        )
    with pytest.raises(ValueError, match="cache"):
        layer(query, value, cache=np.zeros((B, 3, 5, H, DK)))
    other = MultiHead(num_heads=H, key_dim=DK, value_dim=DK + 1)
    with pytest.raises(ValueError, match="value_dim"):
        other.get_initial_cache(B, 5)
