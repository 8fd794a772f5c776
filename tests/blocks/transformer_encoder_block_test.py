import keras
import numpy as np
import pytest

from attention_zoo.blocks import TransformerEncoderBlock
from tests.test_case import assert_model_round_trip
from tests.test_case import np_softmax
from tests.test_case import run_layer_test
from tests.test_case import to_numpy

MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)


def np_layer_norm(x, norm):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    x = (x - mean) / np.sqrt(var + norm.epsilon)
    return x * to_numpy(norm.gamma) + to_numpy(norm.beta)


def np_multi_head(query, value, attention, mask):
    """NumPy MultiHead: `mask` `(B, Tq, Tv)`, True = attend."""
    w = {v.name: to_numpy(v) for v in attention.weights}
    q = np.einsum("btd,dhk->bthk", query, w["query_kernel"]) + w["query_bias"]
    k = np.einsum("btd,dhk->bthk", value, w["key_kernel"]) + w["key_bias"]
    v = np.einsum("btd,dhk->bthk", value, w["value_kernel"]) + w["value_bias"]
    scores = np.einsum("bqhk,bvhk->bhqv", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask[:, None], scores, -1e9)
    weights = np_softmax(scores) * mask[:, None]
    context = np.einsum("bhqv,bvhk->bqhk", weights, v)
    out = np.einsum("bqhk,hko->bqo", context, w["output_kernel"])
    return out + w["output_bias"], weights


def np_feed_forward(x, block):
    inner, outer = block._ffn_inner, block._ffn_output
    h = np.maximum(x @ to_numpy(inner.kernel) + to_numpy(inner.bias), 0)
    return h @ to_numpy(outer.kernel) + to_numpy(outer.bias)


def np_encoder_block(x, mask, block):
    h = np_layer_norm(x, block._self_attention_norm)
    pair = mask[:, None, :] & np.ones_like(mask)[:, :, None]
    attended, _ = np_multi_head(h, h, block._self_attention, pair)
    x = x + attended * mask[..., None]
    h = np_layer_norm(x, block._feed_forward_norm)
    return x + np_feed_forward(h, block)


def make_block(**kwargs):
    arguments = dict(num_heads=2, key_dim=4, feed_forward_dim=16)
    arguments.update(kwargs)
    return TransformerEncoderBlock(**arguments)


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_layer_harness(dropout):
    run_layer_test(
        TransformerEncoderBlock,
        dict(num_heads=2, key_dim=4, feed_forward_dim=16, dropout=dropout),
        np.random.randn(2, 5, 8).astype("float32"),
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=16,
    )


def test_matches_numpy_reference():
    x = np.random.randn(2, 5, 8).astype("float32")
    block = make_block()
    output = to_numpy(block(x, mask=MASK))
    expected = np_encoder_block(x, MASK, block)
    np.testing.assert_allclose(output[MASK], expected[MASK], atol=1e-5)


def test_masked_values_do_not_change_output():
    x = np.random.randn(2, 5, 8).astype("float32")
    changed = np.where(MASK[..., None], x, 100.0).astype("float32")
    block = make_block()
    a, b = to_numpy(block(x, mask=MASK)), to_numpy(block(changed, mask=MASK))
    np.testing.assert_allclose(a[MASK], b[MASK], atol=1e-5)


def test_implicit_mask_equals_explicit_mask():
    ids = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]], "int32")
    embedding = keras.layers.Embedding(6, 8, mask_zero=True)
    block = make_block()
    inputs = keras.Input((None,), dtype="int32")
    outputs = block(embedding(inputs))
    model = keras.Model(inputs, outputs)
    implicit = to_numpy(model(ids))
    explicit = to_numpy(block(embedding(ids), mask=ids != 0))
    np.testing.assert_allclose(implicit, explicit, atol=1e-6)
    assert outputs._keras_mask is not None


def test_fully_masked_row_is_finite():
    x = np.random.randn(2, 5, 8).astype("float32")
    mask = MASK.copy()
    mask[0] = False
    assert np.all(np.isfinite(to_numpy(make_block()(x, mask=mask))))


def test_mixed_precision_large_inputs():
    x = 30 * np.random.randn(2, 5, 8).astype("float32")
    block = make_block()
    reference = to_numpy(block(x, mask=MASK))
    mixed = make_block(dtype="mixed_bfloat16")
    mixed.build(x.shape)
    mixed.set_weights(block.get_weights())
    output = to_numpy(keras.ops.cast(mixed(x, mask=MASK), "float32"))
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, reference, atol=0.5, rtol=0.05)


def test_model_round_trip(tmp_path):
    inputs = keras.Input((None, 8))
    model = keras.Model(inputs, make_block(dropout=0.1)(inputs))
    x = np.random.randn(2, 5, 8).astype("float32")
    assert_model_round_trip(model, x, tmp_path)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(num_heads=0), "num_heads"),
        (dict(key_dim=2.5), "key_dim"),
        (dict(feed_forward_dim=-1), "feed_forward_dim"),
        (dict(dropout=1.0), "dropout"),
    ],
)
def test_invalid_arguments_raise(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        make_block(**kwargs)
