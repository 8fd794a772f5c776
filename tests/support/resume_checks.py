"""The interrupted-and-resumed `fit` checks every application passes.

`check_fit_resumes(new, load_assets, train, run_dir)` trains a fresh
application object (`new()`) with `checkpoint_dir=run_dir`, interrupts it
at the start of its third epoch, rebuilds it from the run directory
(`load_assets(run_dir)`) and fits again with the same arguments: only the
third epoch must run, starting from the weights the first run ended its
second epoch with. `check_cli_resumes` does the same through the
`attention-zoo train APP` command line.
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


def check_cli_resumes(monkeypatch, bundle_class, argv, run_dir):
    """`attention-zoo` run twice with `argv`, the first run interrupted at
    the start of its second epoch: the second run must train only that
    epoch, starting from the weights the first ended its first epoch with.

    `bundle_class.fit` is wrapped (with `monkeypatch`) to add the interrupt
    and the check. Returns `(first, resumed)`, the two runs' bundles.
    """
    from attention_zoo_apps import cli

    fit = bundle_class.fit
    bundles, seen = {}, []

    def interrupted_fit(self, *args, callbacks=(), **kwargs):
        bundles["first"] = self
        stop = InterruptAtEpoch(1)
        return fit(self, *args, callbacks=[*callbacks, stop], **kwargs)

    monkeypatch.setattr(bundle_class, "fit", interrupted_fit)
    with pytest.raises(Interrupt):
        cli.main(argv)
    assert os.path.exists(os.path.join(run_dir, "backup"))
    expected = bundles["first"].model.get_weights()  # after epoch 0

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(epoch)
            for a, b in zip(self.model.get_weights(), expected):
                np.testing.assert_allclose(a, b)

    def recorded_fit(self, *args, callbacks=(), **kwargs):
        bundles["resumed"] = self
        return fit(self, *args, callbacks=[*callbacks, Record()], **kwargs)

    monkeypatch.setattr(bundle_class, "fit", recorded_fit)
    assert cli.main(argv) == 0
    assert seen == [1]  # only the second epoch ran, from the saved weights
    return bundles["first"], bundles["resumed"]
