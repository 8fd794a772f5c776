"""Padding batches to a few fixed shapes before a compiled call.

An XLA-compiled function compiles once per input shape. Called on raw
batches (any batch size, any sentence length) it recompiles often, which
costs about a second each time on a CPU. `pad_to_buckets` rounds the batch
size up to a power of two (then to a multiple of `batch_multiple`) and the
length up to a multiple of `length_multiple`, so a served model meets only
a handful of shapes. The padding rows and columns are PAD ids: the models
mask them, so the real rows give the same result, and `unpad` cuts them off
again.
"""

import tensorflow as tf


def bucket_batch_size(batch, batch_multiple=64):
    """`batch` rounded up: the next power of two up to `batch_multiple`,
    then the next multiple of `batch_multiple` (works on int tensors)."""
    batch = tf.maximum(tf.cast(batch, tf.int32), 1)
    powers = 2 ** tf.range(31, dtype=tf.int32)
    power = tf.reduce_min(tf.where(powers >= batch, powers, powers[-1]))
    multiple = -(-batch // batch_multiple) * batch_multiple
    return tf.where(batch <= batch_multiple, power, multiple)


def pad_to_buckets(ids, length_multiple=8, batch_multiple=64, pad_id=0):
    """Pads int ids `(B, T)` with `pad_id` to a bucketed `(B', T')`.

    Args:
        ids: int tensor `(B, T)`.
        length_multiple: int, `T'` is `T` rounded up to a multiple of it
            (at least one multiple). Defaults to `8`.
        batch_multiple: int, see `bucket_batch_size`. Defaults to `64`.
        pad_id: int, the fill value. Defaults to `0`.

    Returns:
        `(padded, batch, length)`: the padded ids and the original `B` and
        `T` (int32 scalars) for `unpad`.
    """
    ids = tf.convert_to_tensor(ids)
    shape = tf.shape(ids)
    batch, length = shape[0], shape[1]
    padded_length = tf.maximum(
        -(-length // length_multiple) * length_multiple, length_multiple
    )
    padded_batch = bucket_batch_size(batch, batch_multiple)
    paddings = [[0, padded_batch - batch], [0, padded_length - length]]
    padded = tf.pad(ids, paddings, constant_values=pad_id)
    return padded, batch, length


def unpad(tensor, batch, length=None):
    """Cuts `tensor` back to its first `batch` rows and, if `length` is
    given, its last axis to `length` entries."""
    tensor = tensor[:batch]
    if length is not None:
        tensor = tensor[..., :length]
    return tensor
