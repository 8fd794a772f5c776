"""Bucketed padding before compiled calls."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.buckets import bucket_batch_size
from attention_zoo.buckets import bucket_length
from attention_zoo.buckets import pad_to_buckets
from attention_zoo.buckets import unpad
from tests.support.layer_checks import to_numpy


def _reference_batch(n, multiple=64):
    n = max(n, 1)
    if n <= multiple:
        power = 1
        while power < n:
            power *= 2
        return power
    return -(-n // multiple) * multiple


@pytest.mark.parametrize(
    "n", [0, 1, 2, 3, 5, 8, 9, 31, 33, 63, 64, 65, 127, 128, 129, 512, 1000]
)
def test_bucket_batch_size(n):
    assert int(bucket_batch_size(n)) == _reference_batch(n)
    assert int(bucket_batch_size(n, 16)) == _reference_batch(n, 16)
    # A tensor gives the same size, as a tensor.
    size = bucket_batch_size(ops.convert_to_tensor(n, "int32"))
    assert int(to_numpy(size)) == _reference_batch(n)


def test_bucket_length():
    assert [bucket_length(n) for n in (0, 1, 8, 9, 16)] == [8, 8, 8, 16, 16]
    assert int(to_numpy(bucket_length(ops.convert_to_tensor(9)))) == 16


def test_pad_to_buckets_and_unpad():
    ids = np.arange(1, 3 * 11 + 1, dtype="int32").reshape(3, 11)
    padded, batch, length = pad_to_buckets(ids, length_multiple=8)
    padded = to_numpy(padded)
    assert padded.shape == (4, 16) and int(batch) == 3 and int(length) == 11
    np.testing.assert_array_equal(padded[:3, :11], ids)
    assert np.all(padded[3:] == 0) and np.all(padded[:, 11:] == 0)
    back = unpad(padded, batch, length)
    np.testing.assert_array_equal(back, ids)
    # An empty length still gets one bucket; the pad id is configurable.
    padded, _, _ = pad_to_buckets(ops.zeros([2, 0], "int32"), pad_id=7)
    padded = to_numpy(padded)
    assert padded.shape == (2, 8) and np.all(padded == 7)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="unknown shapes exist only in TensorFlow graphs",
)
def test_pad_to_buckets_in_a_graph_has_few_shapes():
    import tensorflow as tf

    shapes = set()

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def padded_shape(ids):
        return tf.shape(pad_to_buckets(ids)[0])

    for batch in range(1, 20):
        for length in range(1, 33):
            ids = tf.ones([batch, length], tf.int32)
            shapes.add(tuple(padded_shape(ids).numpy()))
    assert len(shapes) == 6 * 4  # batch 1..32 in 6, length 8..32 in 4
