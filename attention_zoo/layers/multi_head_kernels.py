"""The attention core of `MultiHead`: the merged mask and the two kernels.

`MultiHead` projects queries, keys and values into heads `(B, T, H, D)`;
what happens between the projections is here: `attention_mask` merges the
padding, explicit, causal and cache masks into one boolean mask,
`explicit_attention` computes the weights (float32 masked softmax) and
their weighted sum, and `fused_attention` leaves both to
`ops.dot_product_attention` when no weights are asked for and an
accelerator's kernel is faster (`fused_kernel_is_faster`).
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
    BENCHMARKS.md, "MultiHead vs `keras.layers.MultiHeadAttention`").
    """
    devices = keras.distribution.list_devices()
    return any(not device.lower().startswith("cpu") for device in devices)


def attention_mask(
    query_length,
    value_length,
    value_mask,
    key_mask,
    attention_mask,
    use_causal_mask,
    same_length,
    cache_update_index,
):
    """Merged boolean mask `(B | 1, 1, Tq, Tv)` or None, and `is_causal`.

    `is_causal` is True when the causal mask is the only one and the
    lengths are equal: the mask is then left to the attention kernel.
    With `cache_update_index`, query `t` sees cache positions
    `<= cache_update_index + t`.
    """
    if cache_update_index is not None:
        row = ops.expand_dims(ops.arange(query_length), -1)  # (Tq, 1)
        col = ops.expand_dims(ops.arange(value_length), 0)  # (1, Tmax)
        mask = col <= row + cache_update_index  # (Tq, Tmax)
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
        )
        mask = merge_attention_masks(
            query_length,
            value_length,
            value_mask=value_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask and not is_causal,
        )
    if mask is not None:
        while len(mask.shape) < 4:
            mask = ops.expand_dims(mask, -3)  # (B | 1, 1, Tq, Tv)
    return mask, is_causal


def fused_attention(q, k, v, mask, is_causal):
    """`ops.dot_product_attention` on `(B, T, H, D)`; no weights.

    `q` must already be scaled by `1 / sqrt(Dk)`.

    Returns:
        `(context (B, Tq, H, Dv), None)`.
    """
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
        k: keys `(B, Tv, H, Dk)`.
        v: values `(B, Tv, H, Dv)`.
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
    q = ops.transpose(q, (0, 2, 1, 3))  # (B, H, Tq, Dk)
    k = ops.transpose(k, (0, 2, 3, 1))  # (B, H, Dk, Tv)
    v = ops.transpose(v, (0, 2, 1, 3))  # (B, H, Tv, Dv)
    weights = masked_softmax(ops.matmul(q, k), mask)  # (B, H, Tq, Tv)
    dropped = dropout(weights, training=training)
    context = ops.matmul(dropped, v)  # (B, H, Tq, Dv)
    return ops.transpose(context, (0, 2, 1, 3)), weights
