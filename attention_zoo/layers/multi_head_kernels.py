"""The attention core of `MultiHead`: projections, the mask, two kernels.

`project` and `output_projection` turn `(B, T, d)` into heads
`(B, T, H, D)` and back as 2-D matmuls. What happens between them is here
too: `attention_mask` merges the padding, explicit, causal, sliding-window
and cache masks into one boolean mask, `explicit_attention` computes the
weights (float32 masked softmax) and their weighted sum, and
`fused_attention` leaves both to `ops.dot_product_attention` when no
weights are asked for and an accelerator's kernel is faster
(`fused_kernel_is_faster`). Keys and values may have fewer heads `K` than
the queries `H` (grouped-query attention): query head `h` reads key/value
head `h // (H / K)`. `check_cache` and `write_cache` keep the key/value
cache `(B, 2, Tmax, K, Dk)`.
"""

import functools

import keras
from keras import ops

from attention_zoo.layers.masked_softmax import masked_softmax
from attention_zoo.layers.masked_softmax import merge_attention_masks


@functools.cache
def fused_kernel_is_faster():
    """Whether to prefer `ops.dot_product_attention` when no weights are due.

    Yes on accelerators (flash / cuDNN kernels). On CPU both backends lower
    it to einsums over `(B, T, H, D)` with a scaled copy of the scores and a
    full-size mask, which `explicit_attention` beats by 1.1-1.6x (see
    docs/benchmarks/attention-layers.md, `multi_head_bench`).
    """
    devices = keras.distribution.list_devices()
    return any(not device.lower().startswith("cpu") for device in devices)


def project(x, kernel, bias, scale=None):
    """`(B, T, d)` by `(d, H, D)` -> `scale * (B, T, H, D)`."""
    d, heads, depth = kernel.shape
    kernel = ops.reshape(ops.cast(kernel, x.dtype), (d, heads * depth))
    if bias is not None:
        bias = ops.reshape(ops.cast(bias, x.dtype), (heads * depth,))
    if scale is not None:
        kernel = kernel * ops.cast(scale, x.dtype)
        bias = None if bias is None else bias * ops.cast(scale, x.dtype)
    y = ops.matmul(ops.reshape(x, (-1, d)), kernel)  # (B * T, H * D)
    if bias is not None:
        y = y + bias
    batch, length = ops.shape(x)[0], ops.shape(x)[1]
    return ops.reshape(y, (batch, length, heads, depth))


def output_projection(context, kernel, bias):
    """`(B, Tq, H, Dv)` by `(H, Dv, O)` -> `(B, Tq, O)` as one 2-D matmul."""
    heads, depth, out_dim = kernel.shape
    batch, length = ops.shape(context)[0], ops.shape(context)[1]
    y = ops.matmul(
        ops.reshape(context, (-1, heads * depth)),
        ops.reshape(kernel, (heads * depth, out_dim)),
    )  # (B * Tq, O)
    if bias is not None:
        y = y + bias
    return ops.reshape(y, (batch, length, out_dim))


def check_cache(cache, layer):
    """Raises a `ValueError` unless `layer` (a `MultiHead`) can use a cache.

    That needs `value_dim == key_dim` and, when `cache` is not None, the
    shape `(B, 2, Tmax, K, Dk)`.
    """
    if layer.value_dim not in (None, layer.key_dim):
        raise ValueError(
            "A cache needs `value_dim == key_dim`. Received: "
            f"key_dim={layer.key_dim}, value_dim={layer.value_dim}"
        )
    expected = (layer.num_key_value_heads or layer.num_heads, layer.key_dim)
    if cache is not None and (
        len(cache.shape) != 5
        or cache.shape[1] != 2
        or tuple(cache.shape[3:]) != expected
    ):
        raise ValueError(
            "`cache` must have shape (B, 2, Tmax, num_key_value_heads, "
            f"key_dim) = (B, 2, Tmax, {expected[0]}, {expected[1]}). "
            f"Received: cache.shape={cache.shape}"
        )


def write_cache(cache, step_k, step_v, cache_update_index):
    """Writes a step's keys and values `(B, Tq, K, Dk)` into `cache`.

    They go to positions `cache_update_index, ..., + Tq - 1`.

    Returns:
        All keys and values `(B, Tmax, K, Dk)` each, and the new cache
        `(B, 2, Tmax, K, Dk)`.
    """
    k, v = cache[:, 0], cache[:, 1]  # (B, Tmax, K, Dk) each
    start = [0, cache_update_index, 0, 0]
    k = ops.slice_update(k, start, ops.cast(step_k, k.dtype))
    v = ops.slice_update(v, start, ops.cast(step_v, v.dtype))
    return k, v, ops.stack((k, v), axis=1)


def _distance(query_length, value_length, first_position):
    """`(Tq, Tv)` int: `p_i - j`, query `i` at `p_i = first_position + i`."""
    row = ops.expand_dims(ops.arange(query_length), -1)  # (Tq, 1)
    col = ops.expand_dims(ops.arange(value_length), 0)  # (1, Tv)
    return row + first_position - col


def attention_mask(
    query_length,
    value_length,
    value_mask,
    key_mask,
    attention_mask,
    use_causal_mask,
    same_length,
    cache_update_index,
    sliding_window=None,
):
    """Merged boolean mask `(B | 1, 1, Tq, Tv)` or None, and `is_causal`.

    `is_causal` is True when the causal mask is the only one and the
    lengths are equal: the mask is then left to the attention kernel.
    With `cache_update_index`, query `t` sees cache positions
    `<= cache_update_index + t`. With `sliding_window`, query `i` at
    position `p_i` (`cache_update_index + i`, else `Tv - Tq + i` as in the
    causal mask) sees key `j` only when `|p_i - j| < sliding_window`.
    """
    if cache_update_index is not None:
        distance = _distance(query_length, value_length, cache_update_index)
        mask = distance >= 0  # (Tq, Tmax)
        if sliding_window is not None:
            mask = mask & (distance < sliding_window)
        if attention_mask is not None:
            mask = ops.cast(attention_mask, "bool") & mask
        is_causal = False
    else:
        if key_mask is not None:
            key_mask = ops.cast(key_mask, "bool")
            value_mask = (
                key_mask
                if value_mask is None
                else ops.cast(value_mask, "bool") & key_mask
            )
        is_causal = bool(
            use_causal_mask
            and value_mask is None
            and attention_mask is None
            and same_length
            and sliding_window is None
        )
        mask = merge_attention_masks(
            query_length,
            value_length,
            value_mask=value_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask and not is_causal,
        )
        if sliding_window is not None:
            distance = _distance(
                query_length, value_length, value_length - query_length
            )
            window = ops.abs(distance) < sliding_window  # (Tq, Tv)
            mask = window if mask is None else mask & window
    if mask is not None:
        while len(mask.shape) < 4:
            mask = ops.expand_dims(mask, -3)  # (B | 1, 1, Tq, Tv)
    return mask, is_causal


def fused_attention(q, k, v, mask, is_causal):
    """`ops.dot_product_attention` on `(B, T, H | K, D)`; no weights.

    `q` must already be scaled by `1 / sqrt(Dk)`. With fewer key/value
    heads than query heads, JAX's kernel (XLA and cuDNN) takes the grouped
    heads as they are; for the other backends each key/value head is
    repeated for the `H / K` query heads that share it.

    Returns:
        `(context (B, Tq, H, Dv), None)`.
    """
    groups = q.shape[2] // k.shape[2]
    if groups > 1 and keras.backend.backend() != "jax":
        k = ops.repeat(k, groups, axis=2)  # (B, Tv, H, Dk)
        v = ops.repeat(v, groups, axis=2)  # (B, Tv, H, Dv)
    context = ops.dot_product_attention(
        q, k, v, mask=mask, scale=1.0, is_causal=is_causal
    )  # (B, Tq, H, Dv)
    if mask is not None:
        # The kernel averages all values when a row has no visible key;
        # the explicit path gives zero there.
        has_key = ops.any(mask, axis=-1)  # (B | 1, 1, Tq)
        has_key = ops.expand_dims(ops.swapaxes(has_key, -1, -2), -1)
        context = context * ops.cast(has_key, context.dtype)
    return context, None


def explicit_attention(q, k, v, mask, is_causal, dropout, training=None):
    """Scores, float32 masked softmax, dropout, weighted sum.

    Args:
        q: scaled queries `(B, Tq, H, Dk)`.
        k: keys `(B, Tv, K, Dk)`, `K` dividing `H`.
        v: values `(B, Tv, K, Dv)`.
        mask: boolean `(B | 1, 1, Tq, Tv)` or None.
        is_causal: bool, apply the causal mask (then `mask` is None).
        dropout: a `keras.layers.Dropout` for the weights.
        training: the call's `training` flag.

    Returns:
        `(context (B, Tq, H, Dv), weights (B, H, Tq, Tv))`.
    """
    if is_causal:
        mask = merge_attention_masks(
            ops.shape(q)[1], ops.shape(k)[1], use_causal_mask=True
        )
    batch, query_length = ops.shape(q)[0], ops.shape(q)[1]
    heads, kv_heads = q.shape[2], k.shape[2]
    groups = heads // kv_heads
    q = _group_queries(q, kv_heads, groups)  # (B, K, G * Tq, Dk)
    k = ops.transpose(k, (0, 2, 3, 1))  # (B, K, Dk, Tv)
    v = ops.transpose(v, (0, 2, 1, 3))  # (B, K, Tv, Dv)
    scores = ops.matmul(q, k)  # (B, K, G * Tq, Tv)
    if groups > 1:
        scores = ops.reshape(scores, (batch, heads, query_length, -1))
    weights = masked_softmax(scores, mask)  # (B, H, Tq, Tv)
    dropped = dropout(weights, training=training)
    if groups > 1:
        dropped = ops.reshape(dropped, (batch, kv_heads, -1, ops.shape(v)[2]))
    context = ops.matmul(dropped, v)  # (B, K, G * Tq, Dv)
    if groups > 1:
        # (B, K, G, Tq, Dv) -> (B, Tq, K, G, Dv) -> (B, Tq, H, Dv)
        context = ops.reshape(
            context, (batch, kv_heads, groups, query_length, -1)
        )
        context = ops.transpose(context, (0, 3, 1, 2, 4))
        return ops.reshape(context, (batch, query_length, heads, -1)), weights
    return ops.transpose(context, (0, 2, 1, 3)), weights


def _group_queries(q, kv_heads, groups):
    """`(B, Tq, H, Dk)` -> `(B, K, G * Tq, Dk)`, head `h` in group `h // G`.

    One matmul per key/value head then serves all `G` query heads that
    share it, without repeating keys or values.
    """
    if groups == 1:
        return ops.transpose(q, (0, 2, 1, 3))  # (B, H, Tq, Dk)
    batch, query_length = ops.shape(q)[0], ops.shape(q)[1]
    q = ops.reshape(q, (batch, query_length, kv_heads, groups, -1))
    q = ops.transpose(q, (0, 2, 3, 1, 4))  # (B, K, G, Tq, Dk)
    return ops.reshape(q, (batch, kv_heads, groups * query_length, -1))
