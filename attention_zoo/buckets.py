"""Padding batches to a few fixed shapes before a compiled call.

An XLA-compiled function compiles once per input shape. Called on raw
batches (any batch size, any sentence length) it recompiles often, which
costs about a second each time on a CPU. `pad_to_buckets` rounds the batch
size up to a power of two (then to a multiple of `batch_multiple`) and the
length up to a multiple of `length_multiple`, so a served model meets only
a handful of shapes. The padding rows and columns are PAD ids: the models
mask them, so the real rows give the same result, and `unpad` cuts them off
again.

Sizes known in Python (eager tensors, static shapes) are rounded in Python
and give Python ints; unknown ones (`None` dimensions inside a traced
function) are rounded with `keras.ops` and give scalar tensors.
"""

import numpy as np
from keras import ops


def _is_int(value):
    return isinstance(value, (int, np.integer))


def bucket_batch_size(batch, batch_multiple=64):
    """`batch` rounded up: the next power of two up to `batch_multiple`,
    then the next multiple of `batch_multiple` (at least 1). An int gives
    an int, a scalar int tensor a tensor."""
    if _is_int(batch):
        batch = max(int(batch), 1)
        if batch <= batch_multiple:
            return 1 << (batch - 1).bit_length()
        return -(-batch // batch_multiple) * batch_multiple
    batch = ops.maximum(ops.cast(batch, "int32"), 1)
    powers = ops.convert_to_tensor(2 ** np.arange(31), "int32")
    power = ops.min(ops.where(powers >= batch, powers, powers[-1]))
    multiple = -(-batch // batch_multiple) * batch_multiple
    return ops.where(batch <= batch_multiple, power, multiple)


def bucket_length(length, length_multiple=8):
    """`length` rounded up to a multiple of `length_multiple` (at least
    one multiple: an empty length still gets a bucket)."""
    rounded = -(-length // length_multiple) * length_multiple
    if _is_int(length):
        return max(int(rounded), length_multiple)
    return ops.maximum(rounded, length_multiple)


def pad_axes(x, sizes, pad_id=0):
    """Pads `x` at the end of its first axes to `sizes` (ints or scalar
    tensors, one per axis, each at least the axis' size) with `pad_id`."""
    shape = ops.shape(x)
    widths = [[0, size - shape[axis]] for axis, size in enumerate(sizes)]
    if all(_is_int(w) and w == 0 for _, w in widths):
        return x  # already a bucket
    widths += [[0, 0]] * (len(x.shape) - len(sizes))
    return ops.pad(x, widths, constant_values=pad_id)


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
        `T` (ints, or int32 scalars where the shape is unknown) for
        `unpad`.
    """
    ids = ops.convert_to_tensor(ids)
    batch, length = ops.shape(ids)[:2]
    sizes = (
        bucket_batch_size(batch, batch_multiple),
        bucket_length(length, length_multiple),
    )
    return pad_axes(ids, sizes, pad_id), batch, length


def unpad(tensor, batch, length=None):
    """Cuts `tensor` back to its first `batch` rows and, if `length` is
    given, its last axis to `length` entries."""
    tensor = tensor[:batch]
    if length is not None:
        tensor = tensor[..., :length]
    return tensor
