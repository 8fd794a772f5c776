"""`pad_to_length_multiple` against a NumPy reference."""

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps.common.batch_padding import pad_to_length_multiple


def _reference(ids, multiple, max_length, pad_id):
    length = ids.shape[1]
    target = max(
        min(int(np.ceil(length / multiple)) * multiple, max_length), length
    )
    out = np.full((ids.shape[0], target), pad_id, ids.dtype)
    out[:, :length] = ids
    return out


@pytest.mark.parametrize(
    "length, multiple, max_length",
    [
        (0, 8, 64),
        (1, 8, 64),
        (8, 8, 64),
        (9, 8, 64),
        (61, 8, 64),
        (13, 4, 10),
        (12, 8, 10),
    ],
)
def test_pads_up_to_the_multiple_within_max_length(
    length, multiple, max_length
):
    ids = np.arange(1, 3 * length + 1, dtype=np.int32).reshape(3, length)
    got = pad_to_length_multiple(
        tf.constant(ids), multiple, max_length, pad_id=7
    )
    np.testing.assert_array_equal(
        got.numpy(), _reference(ids, multiple, max_length, 7)
    )


def test_works_inside_a_dataset_map_with_unknown_lengths():
    dataset = (
        tf.data.Dataset.from_tensor_slices(
            tf.ragged.constant([[1, 2, 3], [4], [5, 6, 7, 8, 9]])
        )
        .batch(2)
        .map(lambda r: pad_to_length_multiple(r.to_tensor(), 4, 6))
    )
    shapes = [batch.shape for batch in dataset]
    assert shapes == [(2, 4), (1, 6)]
