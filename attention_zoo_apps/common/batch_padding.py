"""Batch lengths rounded up to a multiple, for `tf.data` pipelines.

Keras on JAX compiles one training step per batch shape. Padding each
batch to its longest sequence gives nearly one shape per batch, each a new
compilation; padding up to a multiple of a few tokens (at most the
config's `max_length`) gives a handful. TensorFlow ops, so that it runs
inside `tf.data` maps on every backend (`attention_zoo.buckets`
does the same in `keras.ops` for compiled decoding).
"""

import tensorflow as tf


def pad_to_length_multiple(ids, multiple, max_length, pad_id=0):
    """`ids` `(B, T)` padded with `pad_id` to `T` rounded up to a multiple
    of `multiple`, but never past `max_length` (nor cut: a `T` already
    longer stays)."""
    length = tf.shape(ids)[1]
    bucket = -(-length // multiple) * multiple
    extra = tf.maximum(tf.minimum(bucket, max_length) - length, 0)
    return tf.pad(ids, [[0, 0], [0, extra]], constant_values=pad_id)
