"""NumPy references of the Transformer blocks' parts (layer norm,
MultiHead, feed-forward, the visible window) and MultiHead's options as
the encoder and decoder block tests take them."""

import numpy as np
import pytest

from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import to_numpy

# MultiHead's options as the encoder and decoder blocks take them:
# multi-query, grouped-query, a window, a gate, and all at once.
OPTIONS = [
    pytest.param(dict(num_key_value_heads=1), id="multi_query"),
    pytest.param(
        dict(num_heads=4, key_dim=2, num_key_value_heads=2), id="grouped"
    ),
    pytest.param(dict(sliding_window=2), id="window"),
    pytest.param(dict(use_gate=True), id="gate"),
    pytest.param(
        dict(
            num_heads=4,
            key_dim=2,
            num_key_value_heads=2,
            sliding_window=2,
            use_gate=True,
        ),
        id="all",
    ),
]
DEFAULT_AND_OPTIONS = [pytest.param(dict(), id="default"), *OPTIONS]
OPTION_DEFAULTS = dict(
    num_key_value_heads=None, sliding_window=None, use_gate=False
)


def np_layer_norm(x, norm):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    x = (x - mean) / np.sqrt(var + norm.epsilon)
    return x * to_numpy(norm.gamma) + to_numpy(norm.beta)


def np_multi_head(query, value, attention, mask):
    """NumPy MultiHead: `mask` `(B, Tq, Tv)`, True = attend.

    `K < H` key/value heads are repeated (query head `h` reads head
    `h // (H / K)`); a gate multiplies each head's context by
    `sigmoid(query W^G + b^G)`.
    """
    w = {v.name: to_numpy(v) for v in attention.weights}
    q = np.einsum("btd,dhk->bthk", query, w["query_kernel"]) + w["query_bias"]
    k = np.einsum("btd,dhk->bthk", value, w["key_kernel"]) + w["key_bias"]
    v = np.einsum("btd,dhk->bthk", value, w["value_kernel"]) + w["value_bias"]
    groups = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, groups, axis=2), np.repeat(v, groups, axis=2)
    scores = np.einsum("bqhk,bvhk->bhqv", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask[:, None], scores, -1e9)
    weights = np_softmax(scores) * mask[:, None]
    context = np.einsum("bhqv,bvhk->bqhk", weights, v)
    if "gate_kernel" in w:
        gate = np.einsum("btd,dhk->bthk", query, w["gate_kernel"])
        context = context / (1 + np.exp(-(gate + w["gate_bias"])))
    out = np.einsum("bqhk,hko->bqo", context, w["output_kernel"])
    return out + w["output_bias"], weights


def np_feed_forward(x, block):
    inner, outer = block._ffn_inner, block._ffn_output
    h = np.maximum(x @ to_numpy(inner.kernel) + to_numpy(inner.bias), 0)
    return h @ to_numpy(outer.kernel) + to_numpy(outer.bias)


def np_window(length, block, causal=False):
    """`(T, T)` pairs `(i, j)` the block's self-attention may see."""
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    visible = j <= i if causal else np.ones((length, length), bool)
    if block.sliding_window is not None:
        visible &= np.abs(i - j) < block.sliding_window
    return visible


def repeat_key_value_heads(grouped, plain):
    """Sets `plain`'s weights (`H` key/value heads) from `grouped`'s `K`.

    Key/value kernels `(d, K, Dk)` and biases `(K, Dk)` are repeated so
    head `h` holds `grouped`'s head `h // (H / K)`; the rest is copied.
    """
    weights = []
    for g, p in zip(grouped.weights, plain.weights):
        value = to_numpy(g)
        if value.shape != tuple(p.shape):
            axis = 1 if g.name.endswith("kernel") else 0
            value = np.repeat(value, p.shape[axis] // value.shape[axis], axis)
        weights.append(value)
    plain.set_weights(weights)
