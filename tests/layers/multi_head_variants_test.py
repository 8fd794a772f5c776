"""`MultiHead` with grouped-query heads, a sliding window and a gate.

The plain layer is tested in `multi_head_test.py`; here every option is
checked against one NumPy reference (`np_attention`), on both backends.
"""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import MultiHead
from attention_zoo.layers import multi_head_kernels
from tests.support.layer_checks import assert_config_round_trip
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, T, TV, DQ, DV, H, DK = 2, 6, 7, 8, 5, 4, 3


def np_attention(
    query,
    value,
    weights,
    causal=False,
    window=None,
    mask=None,
    query_mask=None,
    first_position=None,
):
    """NumPy reference; `weights` in the layer's order (gate last).

    Query `i` sits at `first_position + i` (default `Tv - Tq + i`); the
    window keeps key `j` when `|p_i - j| < window`.
    """
    wq, bq, wk, bk, wv, bv, wo, bo = weights[:8]
    q = np.einsum("btd,dhk->bthk", query, wq) + bq  # (B, Tq, H, Dk)
    k = np.einsum("btd,dhk->bthk", value, wk) + bk  # (B, Tv, K, Dk)
    v = np.einsum("btd,dhk->bthk", value, wv) + bv
    groups = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, groups, axis=2), np.repeat(v, groups, axis=2)
    tq, tv = q.shape[1], k.shape[1]
    first = tv - tq if first_position is None else first_position
    distance = np.arange(tq)[:, None] + first - np.arange(tv)[None]
    keep = np.ones((len(query), tq, tv), bool)
    keep &= True if mask is None else mask
    keep &= (distance >= 0) if causal else True
    keep &= (np.abs(distance) < window) if window else True
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    probs = np_softmax(np.where(keep[:, None], scores, -1e9)) * keep[:, None]
    context = np.einsum("bhqk,bkhd->bqhd", probs, v)
    if len(weights) > 8:
        wg, bg = weights[8:]
        gate = np.einsum("btd,dhk->bthk", query, wg) + bg
        context = context / (1.0 + np.exp(-gate))
    out = np.einsum("bqhd,hdo->bqo", context, wo) + bo
    if query_mask is not None:
        out = out * query_mask[..., None]
        probs = probs * query_mask[:, None, :, None]
    return out, probs


def built_layer(query, value, scale=0.5, **kwargs):
    layer = MultiHead(num_heads=H, key_dim=DK, **kwargs)
    layer(query, value)
    weights = [
        np.random.normal(size=w.shape).astype("float32") * scale
        for w in layer.weights
    ]
    layer.set_weights(weights)
    return layer, weights


def data(tq=T, tv=TV, width=DQ):
    query = np.random.normal(size=(B, tq, DQ)).astype("float32")
    value = np.random.normal(size=(B, tv, width)).astype("float32")
    return query, value


@pytest.fixture(params=[False, True], ids=["explicit", "fused"])
def fused(request, monkeypatch):
    """Both paths: the fused one is otherwise never taken on CPU."""
    monkeypatch.setattr(
        multi_head_kernels, "fused_kernel_is_faster", lambda: request.param
    )
    return request.param


OPTIONS = [
    {"num_key_value_heads": 2},
    {"num_key_value_heads": 1},
    {"sliding_window": 2},
    {"use_gate": True},
    {"num_key_value_heads": 2, "sliding_window": 3, "use_gate": True},
]
OPTION_IDS = ["gqa", "mqa", "window", "gate", "all"]


@pytest.mark.parametrize(
    "init_kwargs, call_kwargs",
    [
        ({"num_key_value_heads": 1}, {}),
        (
            {"num_key_value_heads": 2, "sliding_window": 2, "use_gate": True},
            {"use_causal_mask": True, "return_attention_scores": True},
        ),
    ],
    ids=["mqa", "all_causal_scores"],
)
def test_layer_harness(init_kwargs, call_kwargs):
    query, _ = data()
    run_layer_test(
        MultiHead,
        {"num_heads": H, "key_dim": DK, **init_kwargs},
        {"query": query, "value": query},
        (B, T, DQ),
        expected_num_trainable_weights=10 if "use_gate" in init_kwargs else 8,
        call_kwargs=call_kwargs,
    )


@pytest.mark.parametrize("causal", [False, True], ids=["band", "causal"])
@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_self_attention_matches_numpy(options, causal, fused):
    query, _ = data()
    layer, weights = built_layer(query, query, **options)
    window = options.get("sliding_window")
    expected, probs = np_attention(query, query, weights, causal, window)
    out = layer(query, query, use_causal_mask=causal)
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)
    out, scores = layer(
        query, query, use_causal_mask=causal, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(scores), probs, atol=1e-6)


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_cross_attention_with_masks_matches_numpy(options, fused):
    # Tq < Tv: the window is aligned to the end, as the causal mask is.
    query, value = data(tq=4, width=DV)
    layer, weights = built_layer(query, value, **options)
    value_mask = np.ones((B, TV), bool)
    value_mask[0, 5:] = False
    attention_mask = np.random.uniform(size=(B, 4, TV)) > 0.3
    query_mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1]], bool)
    kwargs = {
        "value_mask": value_mask,
        "attention_mask": attention_mask,
        "query_mask": query_mask,
        "use_causal_mask": True,
    }
    expected, probs = np_attention(
        query,
        value,
        weights,
        causal=True,
        window=options.get("sliding_window"),
        mask=attention_mask & value_mask[:, None],
        query_mask=query_mask,
    )
    out = layer(query, value, **kwargs)
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)
    out, scores = layer(query, value, return_attention_scores=True, **kwargs)
    np.testing.assert_allclose(to_numpy(scores), probs, atol=1e-6)
    # Masked keys and masked query rows: changing them changes nothing.
    changed = np.where(value_mask[..., None], value, 50.0).astype("float32")
    again = layer(query, changed, **kwargs)
    np.testing.assert_allclose(to_numpy(again), expected, atol=1e-5)
    np.testing.assert_array_equal(to_numpy(out)[~query_mask], 0.0)


def test_hand_checkable_window_and_gate():
    # Identity projections, zero gate weights: gate = sigmoid(0) = 1/2. With
    # `sliding_window=1` and the causal mask each step sees only itself, so
    # the output is half the input.
    layer = MultiHead(
        num_heads=1, key_dim=1, use_bias=False, sliding_window=1, use_gate=True
    )
    x = np.array([[[1.0], [2.0], [-3.0]]], "float32")
    layer(x, x)
    ones = np.ones((1, 1, 1), "float32")
    layer.set_weights([ones] * 4 + [np.zeros((1, 1, 1), "float32")])
    out, weights = layer(
        x, x, use_causal_mask=True, return_attention_scores=True
    )
    np.testing.assert_array_equal(to_numpy(weights)[0, 0], np.eye(3))
    np.testing.assert_allclose(to_numpy(out), x / 2, atol=1e-7)


def test_default_options_give_the_plain_layer_exactly(fused):
    query, value = data(width=DV)
    plain, weights = built_layer(query, value)
    explicit = MultiHead(
        num_heads=H,
        key_dim=DK,
        num_key_value_heads=H,
        sliding_window=None,
        use_gate=False,
    )
    explicit(query, value)
    explicit.set_weights(weights)
    value_mask = np.arange(TV)[None] < np.array([[5], [7]])
    for kwargs in (
        {},
        {"value_mask": value_mask},
        {"return_attention_scores": True},
    ):
        a = to_numpy(plain(query, value, **kwargs))
        b = to_numpy(explicit(query, value, **kwargs))
        a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    a = plain(query, query[..., :DV], use_causal_mask=True)
    b = explicit(query, query[..., :DV], use_causal_mask=True)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_new_options_round_trip_and_old_configs_load(tmp_path):
    layer = MultiHead(
        num_heads=H,
        key_dim=DK,
        num_key_value_heads=2,
        sliding_window=3,
        use_gate=True,
    )
    assert_config_round_trip(layer)
    config = layer.get_config()
    assert config["num_key_value_heads"] == 2
    assert config["sliding_window"] == 3 and config["use_gate"] is True
    for key in ("num_key_value_heads", "sliding_window", "use_gate"):
        del config[key]  # a config saved before these options existed
    old = MultiHead.from_config(config)
    assert (old.num_key_value_heads, old.sliding_window) == (None, None)
    assert old.use_gate is False
    query, _ = data()
    old(query, query)
    assert tuple(old._key_kernel.shape) == (DQ, H, DK)

    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, DQ, mask_zero=True)(ids)
    y = MultiHead.from_config(layer.get_config())(x, x, use_causal_mask=True)
    model = keras.Model(ids, y)
    tokens = np.array([[1, 2, 3, 4, 0], [5, 6, 7, 8, 9]])
    loaded = assert_model_round_trip(model, tokens, tmp_path)
    assert loaded.layers[-1].get_config() == model.layers[-1].get_config()


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_cache_holds_the_key_value_heads(kv_heads):
    query, value = data(width=DV)
    layer, _ = built_layer(query, value, num_key_value_heads=kv_heads)
    cache = layer.get_initial_cache(batch_size=B, max_length=9)
    assert tuple(cache.shape) == (B, 2, 9, kv_heads, DK)
    assert tuple(layer.compute_cache(value).shape) == (B, 2, TV, kv_heads, DK)
    out, _ = layer(query, query[..., :DV], cache=cache, cache_update_index=0)
    assert tuple(out.shape) == (B, T, DQ)
    # A cache with one head per query head is refused.
    with pytest.raises(ValueError, match="num_key_value_heads"):
        layer(query, value, cache=np.zeros((B, 2, 9, H, DK), "float32"))


def decode(layer, x):
    """Feeds `x` one step at a time through a compiled `fori_loop`."""
    batch, length, width = x.shape

    def body(i, state):
        cache, outputs = state
        step = ops.slice(x, [0, i, 0], [batch, 1, width])
        out, cache = layer(step, step, cache=cache, cache_update_index=i)
        return cache, ops.slice_update(outputs, [0, i, 0], out)

    cache = layer.get_initial_cache(batch, length)
    outputs = ops.zeros((batch, length, width), layer.compute_dtype)
    return jit(lambda: ops.fori_loop(0, length, body, (cache, outputs)))()


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_cached_decoding_equals_the_causal_call(options, fused):
    query, _ = data()
    layer, _ = built_layer(query, query, **options)
    full = layer(query, query, use_causal_mask=True)
    cache, decoded = decode(layer, ops.convert_to_tensor(query))
    np.testing.assert_allclose(to_numpy(decoded), to_numpy(full), atol=1e-5)
    expected = to_numpy(layer.compute_cache(query))
    np.testing.assert_allclose(to_numpy(cache), expected, atol=1e-5)


def test_cached_block_gives_exact_zeros_outside_the_window():
    # Steps 4 and 5 after a prefix of 4, in a cache of 8 positions.
    query, _ = data()
    options = {"num_key_value_heads": 2, "sliding_window": 3}
    layer, weights = built_layer(query, query, **options)
    cache = layer.get_initial_cache(B, 8)
    _, cache = layer(
        query[:, :4], query[:, :4], cache=cache, cache_update_index=0
    )
    out, scores, _ = layer(
        query[:, 4:],
        query[:, 4:],
        cache=cache,
        cache_update_index=4,
        return_attention_scores=True,
    )
    scores = to_numpy(scores)  # (B, H, 2, 8)
    padded = np.concatenate([query, np.zeros((B, 2, DQ), "float32")], 1)
    expected, probs = np_attention(
        query[:, 4:], padded, weights, True, 3, first_position=4
    )
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)
    np.testing.assert_allclose(scores, probs, atol=1e-6)
    # Step 4 sees 2..4, step 5 sees 3..5: everything else is exactly 0.
    np.testing.assert_array_equal(scores[:, :, 0, [0, 1, 5, 6, 7]], 0.0)
    np.testing.assert_array_equal(scores[:, :, 1, [0, 1, 2, 6, 7]], 0.0)
    assert np.all(scores[:, :, 0, 2:5] > 0) and np.all(scores[:, :, 1, 3:6] > 0)


def test_read_only_cache_with_window_equals_the_call():
    query, value = data(width=DV)
    layer, _ = built_layer(
        query, value, num_key_value_heads=1, sliding_window=2
    )
    expected = layer(query, value)
    out, _ = layer(query, query, cache=layer.compute_cache(value))
    np.testing.assert_allclose(to_numpy(out), to_numpy(expected), atol=1e-6)


def test_matches_keras_group_query_attention():
    # Same options, same weights: Keras's layer agrees on a causal
    # self-attention (where both align the window the same way).
    query, _ = data()
    options = {"num_key_value_heads": 2, "sliding_window": 3, "use_gate": True}
    layer, weights = built_layer(query, query, **options)
    reference = keras.layers.GroupQueryAttention(
        head_dim=DK, num_query_heads=H, **options
    )
    reference(query, query)
    ours = {w.path.split("/")[-1]: v for w, v in zip(layer.weights, weights)}
    names = [
        f"{w.path.split('/')[-2]}_{w.name}".replace("attention_", "")
        for w in reference.weights
    ]
    theirs = [ours[name] for name in names]
    reference.set_weights(theirs)
    expected = reference(query, query, use_causal_mask=True)
    out = layer(query, query, use_causal_mask=True)
    np.testing.assert_allclose(to_numpy(out), to_numpy(expected), atol=1e-5)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_with_large_scores(policy, fused):
    query, _ = data()
    options = {"num_key_value_heads": 2, "sliding_window": 3, "use_gate": True}
    reference, weights = built_layer(query, query, scale=10.0, **options)
    mixed = MultiHead(num_heads=H, key_dim=DK, dtype=policy, **options)
    mixed(query, query)
    mixed.set_weights(weights)
    expected = to_numpy(reference(query, query, use_causal_mask=True))
    actual = to_numpy(
        ops.cast(mixed(query, query, use_causal_mask=True), "float32")
    )
    assert np.all(np.isfinite(actual))
    # Near-ties between huge scores may flip in 16 bits: most agree.
    close = np.isclose(actual, expected, atol=0.02 * np.abs(expected).max())
    assert close.mean() > 0.9


def test_fully_masked_rows_are_finite_and_zero(fused):
    query, _ = data()
    options = {"num_key_value_heads": 1, "sliding_window": 2, "use_gate": True}
    layer, _ = built_layer(query, query, **options)
    layer._output_bias.assign(np.zeros((DQ,), "float32"))
    value_mask = np.ones((B, T), bool)
    value_mask[0, 1:3] = False  # step 2 sees keys 1 and 2 only: none left
    out = to_numpy(
        layer(query, query, value_mask=value_mask, use_causal_mask=True)
    )
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[0, 2], 0.0)
    assert np.abs(out[0, [0, 1, 3]]).min() > 0


def test_dropout_with_grouped_heads_only_in_training():
    query, _ = data()
    layer, _ = built_layer(
        query, query, num_key_value_heads=2, dropout=0.5, seed=1
    )
    inference = to_numpy(layer(query, query, training=False))
    trained = to_numpy(layer(query, query, training=True))
    assert np.all(np.isfinite(trained))
    assert not np.allclose(trained, inference, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_key_value_heads": 3}, "num_heads=4, num_key_value_heads=3"),
        ({"num_key_value_heads": 0}, "num_key_value_heads"),
        ({"sliding_window": 0}, "sliding_window"),
        ({"sliding_window": 2.5}, "sliding_window"),
        ({"use_gate": "yes"}, "use_gate"),
    ],
)
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MultiHead(num_heads=H, key_dim=DK, **kwargs)
