"""`--patience` / `fit(..., patience=N)`: stop when the validation loss
has not improved for N epochs, keep the best epoch's weights, and keep the
count across an interrupt (`attention_zoo_apps.common.early_stopping`)."""

import json

import keras
import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps import registry
from attention_zoo_apps.common import training
from attention_zoo_apps.common.early_stopping import RunEarlyStopping
from tests.support import resume_checks
from tests.support.tiny_runs import TINY_FLAGS


def _data():
    """Training targets `y = x`, validation targets `y = -x`: the better
    the model fits, the worse its validation loss, so epoch 1 is best."""
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    return x, x, x, -x


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


class WeightsAtEpochEnd(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.weights = {}

    def on_epoch_end(self, epoch, logs=None):
        self.weights[epoch + 1] = self.model.get_weights()


def _fit(model, callbacks, epochs=10, initial_epoch=0):
    x, y, vx, vy = _data()
    return model.fit(
        x,
        y,
        validation_data=(vx, vy),
        epochs=epochs,
        initial_epoch=initial_epoch,
        batch_size=16,
        shuffle=False,
        callbacks=callbacks,
        verbose=0,
    )


@pytest.mark.parametrize("in_folder", [False, True])
def test_stops_after_patience_and_keeps_the_best_epoch(in_folder, tmp_path):
    model, seen = _model(), WeightsAtEpochEnd()
    directory = str(tmp_path) if in_folder else None
    callbacks = [seen, RunEarlyStopping(2, directory)]
    if in_folder:
        callbacks = training.checkpoint_callbacks(directory) + callbacks
    history = _fit(model, callbacks)
    losses = history.history["val_loss"]
    assert losses[1] > losses[0] and losses[2] > losses[0]  # epoch 1 best
    assert len(losses) == 3  # two epochs without improvement, then stop
    for a, b in zip(model.get_weights(), seen.weights[1]):
        np.testing.assert_array_equal(a, b)
    if in_folder:
        progress = training.read_progress(directory)
        assert progress["epochs"] == 3 and progress["best_epoch"] == 1
        assert progress["stopped_early"] is True
        saved = _model()
        saved.load_weights(str(tmp_path / training.WEIGHTS_FILE))
        for a, b in zip(saved.get_weights(), seen.weights[1]):
            np.testing.assert_array_equal(a, b)


def test_a_resumed_run_keeps_its_patience_count(tmp_path):
    directory = str(tmp_path)
    first, seen = _model(), WeightsAtEpochEnd()
    callbacks = training.checkpoint_callbacks(directory) + [
        seen,
        RunEarlyStopping(3, directory),
        resume_checks.InterruptAtEpoch(2),
    ]
    with pytest.raises(resume_checks.Interrupt):
        _fit(first, callbacks)
    state = training.read_progress(directory)["early_stopping"]
    assert state["best_epoch"] == 1 and state["wait"] == 1

    resumed = _model()
    callbacks = training.checkpoint_callbacks(directory) + [
        RunEarlyStopping(3, directory, resume=True)
    ]
    history = _fit(resumed, callbacks)
    # Epochs 3 and 4 ran: with the count restarted it would need 3 more.
    assert len(history.history["val_loss"]) == 2
    progress = training.read_progress(directory)
    assert progress["epochs"] == 4 and progress["best_epoch"] == 1
    for a, b in zip(resumed.get_weights(), seen.weights[1]):
        np.testing.assert_array_equal(a, b)  # from before the interrupt


def test_patience_needs_validation_data():
    with pytest.raises(ValueError, match="val_loss"):
        x, y, _, _ = _data()
        _model().fit(x, y, epochs=1, callbacks=[RunEarlyStopping(1)], verbose=0)
    with pytest.raises(ValueError, match="positive integer"):
        RunEarlyStopping(0)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--patience", "0"], "--patience must be a positive integer, got 0"),
        (
            ["--patience", "2", "--validation-fraction", "0"],
            "it needs a validation split",
        ),
    ],
)
def test_a_bad_patience_flag_is_a_usage_error(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "ehr", "--run-dir", str(tmp_path), *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err.splitlines()[-1]


def check_cli_patience(app, tmp_path, monkeypatch, capsys):
    """`train APP --patience 1 --epochs 3`: the run folder records the
    epoch kept and holds its weights; a rerun of a run that stopped early
    is complete."""
    bundle_class = registry.get(app).bundle_class()
    fit, seen = bundle_class.fit, WeightsAtEpochEnd()

    def recorded(self, *args, callbacks=(), **kwargs):
        return fit(self, *args, callbacks=[*callbacks, seen], **kwargs)

    monkeypatch.setattr(bundle_class, "fit", recorded)
    run_dir = tmp_path / "run"
    argv = ["train", app, *TINY_FLAGS[app], "--run-dir", str(run_dir)]
    argv += ["--epochs", "3", "--patience", "1"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    progress = json.loads((run_dir / training.PROGRESS_FILE).read_text())
    kept = progress["best_epoch"]
    assert f"kept epoch {kept} (val_loss " in out
    assert progress["stopped_early"] == (progress["epochs"] < 3)
    saved = bundle_class.load(str(run_dir)).model.get_weights()
    for a, b in zip(saved, seen.weights[kept]):
        np.testing.assert_array_equal(a, b)
    if progress["stopped_early"]:
        assert cli.main(argv) == 0
        assert "stopped early, epoch" in capsys.readouterr().out


# Through the command in the slow tier; the quick twin is
# test_stops_after_patience_and_keeps_the_best_epoch. Every command gives
# `--patience` to the common `SavedBundle.fit` (`train_steps.fit_run`):
# translation and captioning (whose `fit` takes images and captions apart)
# stand for the four.
@pytest.mark.slow
@pytest.mark.parametrize("app", ["captioning", "translation"])
def test_patience_through_the_cli(app, tmp_path, monkeypatch, capsys):
    check_cli_patience(app, tmp_path, monkeypatch, capsys)
