"""`KeepEpochWeights` keeps the weights of a run's last epochs and
`averaged_weights` gives their mean: checked against the weights each
epoch ended with, averaged in NumPy."""

import os

import keras
import numpy as np
import pytest

from attention_zoo_apps.common import weight_averaging
from attention_zoo_apps.common.run_files import RunFileError


class _Record(keras.callbacks.Callback):
    """The model's weights at the end of every epoch."""

    def __init__(self):
        super().__init__()
        self.weights = {}

    def on_epoch_end(self, epoch, logs=None):
        self.weights[epoch + 1] = self.model.get_weights()


def _fit(directory, epochs, initial_epoch=0, count=2):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(16, 3))
    y = np.random.default_rng(1).normal(size=(16, 2))
    record = _Record()
    keep = weight_averaging.KeepEpochWeights(str(directory), count)
    model.fit(
        x,
        y,
        epochs=epochs,
        initial_epoch=initial_epoch,
        verbose=0,
        callbacks=[keep, record],
    )
    return record.weights


def test_the_average_is_the_mean_of_the_last_epochs(tmp_path):
    weights = _fit(tmp_path, epochs=4, count=3)
    assert sorted(weight_averaging.epoch_files(tmp_path)) == [2, 3, 4]
    mean, epochs = weight_averaging.averaged_weights(str(tmp_path), 3)
    assert epochs == [2, 3, 4]
    expected = [
        (a + b + c) / 3 for a, b, c in zip(weights[2], weights[3], weights[4])
    ]
    assert len(mean) == len(expected) == 2  # kernel and bias
    for found, wanted in zip(mean, expected):
        assert found.dtype == wanted.dtype
        np.testing.assert_allclose(found, wanted, rtol=1e-6)
    # Fewer kept than asked: the mean of what there is.
    mean, epochs = weight_averaging.averaged_weights(str(tmp_path), 5)
    assert epochs == [2, 3, 4]
    assert weight_averaging.averaged_weights(str(tmp_path / "none"), 2) == (
        None,
        [],
    )


def test_a_run_that_starts_again_drops_the_later_epochs(tmp_path):
    _fit(tmp_path, epochs=5, count=5)
    # Going on from epoch 2 (a run started anew would from 0): epochs 3
    # to 5 of the earlier run are gone before this run writes its own.
    weights = _fit(tmp_path, epochs=3, initial_epoch=2, count=5)
    assert sorted(weight_averaging.epoch_files(tmp_path)) == [1, 2, 3]
    mean, _ = weight_averaging.averaged_weights(str(tmp_path), 1)
    np.testing.assert_allclose(mean[0], weights[3][0])
    weight_averaging.clear(str(tmp_path))
    assert weight_averaging.epoch_files(tmp_path) == {}


def test_a_damaged_file_is_named(tmp_path):
    _fit(tmp_path, epochs=2)
    path = weight_averaging.epoch_files(tmp_path)[2]
    with open(path, "r+b") as file:
        file.truncate(os.path.getsize(path) // 2)
    with pytest.raises(RunFileError, match=r"epoch-2\.npz cannot be read"):
        weight_averaging.averaged_weights(str(tmp_path), 2)
