"""The interrupted-and-resumed `fit` check every application passes.

`check_fit_resumes(new, load_assets, train, run_dir)` trains a fresh
application object (`new()`) with `checkpoint_dir=run_dir`, interrupts it
at the start of its third epoch, rebuilds it from the run directory
(`load_assets(run_dir)`) and fits again with the same arguments: only the
third epoch must run, starting from the weights the first run ended its
second epoch with.
"""

import os

import keras
import numpy as np
import pytest


class Interrupt(Exception):
    """Stands for a kill in the middle of training."""


class InterruptAtEpoch(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise Interrupt()


def check_fit_resumes(new, load_assets, train, run_dir):
    """Returns `(first, resumed)`, the interrupted and the resumed object."""
    first = new()
    with pytest.raises(Interrupt):
        first.fit(
            train,
            epochs=3,
            checkpoint_dir=run_dir,
            callbacks=[InterruptAtEpoch(2)],
            verbose=0,
        )
    assert os.path.exists(os.path.join(run_dir, "model.weights.h5"))
    expected = first.model.get_weights()
    resumed = load_assets(run_dir)
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(epoch)
            # Weights restored from the end of epoch 1 before epoch 2 runs.
            if epoch == 2:
                for a, b in zip(self.model.get_weights(), expected):
                    np.testing.assert_allclose(a, b)

    history = resumed.fit(
        train, epochs=3, checkpoint_dir=run_dir, callbacks=[Record()], verbose=0
    )
    assert seen == [2]
    assert len(history.history["loss"]) == 1
    return first, resumed
