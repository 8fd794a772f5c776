"""`attention-zoo train APP` again in a folder that holds a finished run:
never replaced by other flags without `--overwrite`; the same flags with
more epochs train on from the finished weights; the same flags and no
more epochs only evaluate (see `attention_zoo_apps.common.run_folder`)."""

import importlib
import json

import keras
import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps import registry
from attention_zoo_apps.common import run_folder
from attention_zoo_apps.common import training
from tests.support import tiny_runs
from tests.support import training_logs
from tests.support.shared_folders import copy_of
from tests.support.tiny_runs import LOGS
from tests.support.tiny_runs import TINY_FLAGS

# A config field of each application and a flag that sets it to another
# value than the tiny run's (8).
CHANGES = {
    "translation": ("units", ["--units", "16"]),
    "entailment": ("hidden_units", ["--hidden-units", "16"]),
    "ehr": ("units", ["--units", "16"]),
    "captioning": ("units", ["--units", "16"]),
}


def _train(app, run_dir, *flags):
    return cli.main(
        ["train", app, *TINY_FLAGS[app], *LOGS, "--run-dir", str(run_dir)]
        + list(flags)
    )


def _fake_finished_run(app, run_dir):
    """A finished run's files, its config the one `TINY_FLAGS[app]`
    makes (the weights file is never read: the run is refused)."""
    train_module = importlib.import_module(registry.get(app).train_module)
    flags = importlib.import_module(registry.get(app).flags_module)
    args = flags.train_parser().parse_args(TINY_FLAGS[app])
    run_dir.mkdir()
    (run_dir / "config.json").write_text(
        train_module._config(args, True).to_json()
    )
    (run_dir / training.WEIGHTS_FILE).write_bytes(b"the first model")


@pytest.mark.parametrize("app", sorted(CHANGES))
def test_other_flags_never_replace_a_finished_run(app, tmp_path, capsys):
    run_dir = tmp_path / "run"
    field, flags = CHANGES[app]
    _fake_finished_run(app, run_dir)
    with pytest.raises(SystemExit) as exit_info:
        _train(app, run_dir, *flags)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert f"{run_dir} holds a finished run with another configuration" in error
    assert f"{field}: 8 there, 16 now" in error and "--overwrite" in error
    weights = run_dir / training.WEIGHTS_FILE
    assert weights.read_bytes() == b"the first model"


@pytest.mark.parametrize("app", sorted(CHANGES))
def test_another_applications_run_is_refused(app, tmp_path, capsys):
    run_dir = tmp_path / "run"
    other = "entailment" if app == "translation" else "translation"
    _fake_finished_run(other, run_dir)
    with pytest.raises(SystemExit) as exit_info:
        _train(app, run_dir)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert f"{run_dir} holds no {app} run to go on with" in error
    assert "config.json" in error and "--overwrite" in error


class Recorder(keras.callbacks.Callback):
    """The epochs `fit` runs, and the weights each starts from."""

    def __init__(self):
        super().__init__()
        self.epochs, self.weights = [], []

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)
        self.weights.append(self.model.get_weights())


def _record_fits(monkeypatch, app):
    """Wraps the bundle's `fit` to record what it trains; returns the
    list of each call's `Recorder`."""
    bundle_class = registry.get(app).bundle_class()
    fit = bundle_class.fit
    calls = []

    def recorded(self, *args, callbacks=(), **kwargs):
        calls.append(Recorder())
        return fit(self, *args, callbacks=[*callbacks, calls[-1]], **kwargs)

    monkeypatch.setattr(bundle_class, "fit", recorded)
    return calls


def _saved_weights(app, run_dir):
    bundle = registry.get(app).bundle_class().load(str(run_dir))
    return bundle.model.get_weights()


def check_rerun(app, shared, tmp_path, monkeypatch, capsys):
    """A finished 1-epoch run (trained once per session: its one `fit`
    ran epoch 1 alone); the same flags again only evaluate; `--epochs 2`
    trains epoch 2 alone, from the finished weights."""
    built = tiny_runs.finished_run(shared, app)
    fits = json.loads((built / tiny_runs.FITS_FILE).read_text())
    assert fits == [[0]]
    run_dir = copy_of(built / "run", tmp_path / "run")
    calls = _record_fits(monkeypatch, app)
    finished = _saved_weights(app, run_dir)
    capsys.readouterr()  # what building the shared run printed

    assert _train(app, run_dir, "--epochs", "1") == 0
    out = capsys.readouterr().out
    assert f"The run in {run_dir} is complete (1 epoch): no training" in out
    assert len(calls) == 0  # `fit` was not called
    for a, b in zip(_saved_weights(app, run_dir), finished):
        np.testing.assert_array_equal(a, b)

    assert _train(app, run_dir, "--epochs", "2") == 0
    out = capsys.readouterr().out
    assert f"Continuing the finished run in {run_dir} (1 epoch)" in out
    assert calls[0].epochs == [1]
    for a, b in zip(calls[0].weights[0], finished):
        np.testing.assert_allclose(a, b)
    progress = json.loads((run_dir / training.PROGRESS_FILE).read_text())
    assert progress["epochs"] == 2 and progress["finished"] is True
    assert json.loads((run_dir / "config.json").read_text())["epochs"] == 2
    # The logs go on: the first run's epoch, then the second.
    assert _logged_epochs(run_dir) == ([0, 1], [0, 1])
    return run_dir, calls


def _logged_epochs(run_dir):
    """The epochs of `history.csv`'s rows and of the logged losses."""
    rows = training_logs.history_rows(run_dir)
    found = training_logs.summaries(run_dir)
    return (
        [int(row["epoch"]) for row in rows],
        training_logs.steps(found, "train", "epoch_loss"),
    )


@pytest.mark.slow
def test_a_finished_translation_run_goes_on_or_only_evaluates(
    shared, tmp_path, monkeypatch, capsys
):
    run_dir, calls = check_rerun(
        "translation", shared, tmp_path, monkeypatch, capsys
    )

    # Other flags with --overwrite: a new run from scratch.
    assert _train("translation", run_dir, "--epochs", "1", "--units", "16",
                  "--overwrite") == 0  # fmt: skip
    assert "will be replaced" in capsys.readouterr().out
    assert calls[1].epochs == [0]
    assert json.loads((run_dir / "config.json").read_text())["units"] == 16
    assert _logged_epochs(run_dir) == ([0], [0])  # the new run's alone
    progress = json.loads((run_dir / training.PROGRESS_FILE).read_text())
    assert progress["epochs"] == 1 and "early_stopping" not in progress


# Entailment beside translation's own test: the run folder's code is the
# applications' common code; each application's resume of an interrupted
# run is checked on JAX (`tests/jax_applications`).
@pytest.mark.slow
@pytest.mark.parametrize("app", ["entailment"])
def test_a_finished_run_goes_on_or_only_evaluates(
    app, shared, tmp_path, monkeypatch, capsys
):
    check_rerun(app, shared, tmp_path, monkeypatch, capsys)


def test_run_folder_states_and_epoch_counts(tmp_path):
    from attention_zoo_apps.translation.config import TranslationConfig

    config = TranslationConfig(epochs=5)
    assert run_folder.state(tmp_path) == run_folder.FRESH
    (tmp_path / "config.json").write_text(config.to_json())
    assert run_folder.state(tmp_path) == run_folder.FRESH  # no epoch ended
    (tmp_path / training.WEIGHTS_FILE).write_bytes(b"")
    assert run_folder.state(tmp_path) == run_folder.FINISHED
    # A folder written before progress.json existed: its config's epochs.
    assert run_folder.trained_epochs(tmp_path, config) == 5
    training.write_progress(tmp_path, epochs=3)
    assert run_folder.trained_epochs(tmp_path, config) == 3
    (tmp_path / training.BACKUP_DIR).mkdir()
    assert run_folder.state(tmp_path) == run_folder.INTERRUPTED
    run_folder.clear(tmp_path)
    assert run_folder.state(tmp_path) == run_folder.FRESH
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_differences_leave_out_the_epochs():
    from attention_zoo_apps.translation.config import TranslationConfig

    saved = TranslationConfig(epochs=1)
    wanted = saved.replace(epochs=4, model="transformer", units=16)
    changes = run_folder.differences(saved, wanted)
    assert changes == [("model", "rnn", "transformer"), ("units", 512, 16)]
    assert run_folder.describe(changes) == (
        "model: 'rnn' there, 'transformer' now; units: 512 there, 16 now"
    )
