"""A run folder never loses or corrupts work: a full disk while a file is
written keeps the old file and ends the command with one line naming the
file; damaged run files are refused before anything is written, naming
the file and what to do; an interrupted run refuses other flags.

A full disk is an `ENOSPC` injected where a temporary file is synced
(`_full_disk`): the write fails after the data went out, as on a full
file system."""

import errno
import json
import os
import shutil

import keras
import numpy as np
import pytest

from attention_zoo.export import atomic_file
from attention_zoo.export.atomic_file import WriteError
from attention_zoo.export.atomic_file import atomic_files
from attention_zoo.export.atomic_file import atomic_write
from attention_zoo_apps.common import run_files
from attention_zoo_apps.common import run_folder
from attention_zoo_apps.common import run_lock
from attention_zoo_apps.common import training
from tests.support import tiny_runs
from tests.support import training_logs
from tests.support.shared_folders import copy_of

APP = "entailment"
NO_SPACE = "No space left on device"


def _train(run_dir, *flags):
    return tiny_runs.train(APP, run_dir, *flags, *tiny_runs.LOGS)


def _full_disk(monkeypatch, name):
    """Makes the disk full for the temporaries of files called `name`:
    syncing them raises `ENOSPC`. Returns the list of the paths that
    failed."""
    sync, failed = os.fsync, []

    def fsync(descriptor):
        path = os.readlink(f"/proc/self/fd/{descriptor}")
        if os.path.basename(path).startswith(f".{name}.tmp-"):
            failed.append(path)
            raise OSError(errno.ENOSPC, NO_SPACE)
        return sync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    return failed


def _temporaries(folder):
    return [
        path
        for path in folder.rglob("*")
        if atomic_file.TEMPORARY_MARK in path.name
    ]


def _files(folder):
    """Relative path -> bytes of every file under `folder` (but the lock,
    which the refused run took)."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != run_lock.LOCK_FILE
    }


def _last_error_line(capsys):
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture
def finished(shared, tmp_path, capsys):
    """A copy of the session's finished 1-epoch run."""
    run = copy_of(tiny_runs.finished_run(shared, APP) / "run", tmp_path / "run")
    capsys.readouterr()  # what building the shared run printed
    return run


@pytest.fixture
def interrupted(shared, tmp_path, capsys):
    """A copy of the session's run interrupted at the start of its second
    epoch (of 2)."""
    built = tiny_runs.interrupted_run(shared, APP, epochs=2, at_epoch=1)
    run = copy_of(built / "run", tmp_path / "run")
    assert (run / training.BACKUP_DIR).is_dir()
    capsys.readouterr()
    return run


# -- writing aside ------------------------------------------------------


def test_a_failed_write_keeps_the_old_file_and_names_it(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    path.write_text("old")
    _full_disk(monkeypatch, "progress.json")
    with pytest.raises(WriteError) as error:
        with atomic_write(path) as f:
            f.write("new")
    assert str(error.value) == (
        f"could not write {path}: {NO_SPACE} (the file there, if any, is "
        "unchanged)"
    )
    assert error.value.errno == errno.ENOSPC
    assert path.read_text() == "old"
    assert not _temporaries(tmp_path)


def test_staged_files_name_their_place_when_writing_fails(tmp_path):
    (tmp_path / "vocabulary").mkdir()
    (tmp_path / "vocabulary" / "vocabulary.txt").write_text("old")
    with pytest.raises(WriteError) as error:
        with atomic_files(tmp_path) as staging:
            target = os.path.join(staging, "vocabulary", "vocabulary.txt")
            os.makedirs(os.path.dirname(target))
            raise OSError(errno.ENOSPC, NO_SPACE, target)
    assert error.value.path == str(tmp_path / "vocabulary" / "vocabulary.txt")
    assert (tmp_path / "vocabulary" / "vocabulary.txt").read_text() == "old"
    assert not _temporaries(tmp_path)


def _tiny_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam(), "mse")
    model.optimizer.build(model.trainable_variables)
    return model


def test_a_weights_commit_cut_at_any_step_leaves_a_matching_record(
    tmp_path, monkeypatch
):
    model = _tiny_model()
    run_files.write_weights(tmp_path, "model.weights.h5", model, epochs=1)
    first = (tmp_path / "model.weights.h5").read_bytes()
    model.layers[0].kernel.assign(np.ones((3, 2)))
    # The disk fills after the weights were renamed into place, before
    # the record of them is: the pending record is taken.
    writes = []
    write_text = run_files.write_text

    def fail_the_second(path, text):
        writes.append(path)
        if len(writes) == 2:
            raise WriteError(path, OSError(errno.ENOSPC, NO_SPACE))
        write_text(path, text)

    monkeypatch.setattr(run_files, "write_text", fail_the_second)
    with pytest.raises(WriteError):
        run_files.write_weights(tmp_path, "model.weights.h5", model, epochs=2)
    monkeypatch.undo()
    assert (tmp_path / "model.weights.h5").read_bytes() != first
    progress = run_files.checked_progress(tmp_path)
    assert progress["epochs"] == 2 and "pending" not in progress
    # The weights themselves fail to fit: the old ones and their record.
    model.layers[0].kernel.assign(np.zeros((3, 2)))
    _full_disk(monkeypatch, "model.weights.h5")
    kept = (tmp_path / "model.weights.h5").read_bytes()
    with pytest.raises(WriteError, match="model.weights.h5: No space"):
        run_files.write_weights(tmp_path, "model.weights.h5", model, epochs=3)
    assert (tmp_path / "model.weights.h5").read_bytes() == kept
    assert run_files.checked_progress(tmp_path)["epochs"] == 2


# -- a full disk during training ------------------------------------------


def test_a_full_disk_at_the_first_checkpoint_is_one_line_and_no_run(
    tmp_path, monkeypatch, capsys
):
    run_dir = tmp_path / "run"
    failed = _full_disk(monkeypatch, training.WEIGHTS_FILE)
    with pytest.raises(SystemExit) as exit_info:
        _train(run_dir, "--epochs", "1")
    assert exit_info.value.code == 1 and failed
    weights = run_dir / training.WEIGHTS_FILE
    assert _last_error_line(capsys) == (
        f"attention-zoo train {APP}: error: could not write {weights}: "
        f"{NO_SPACE} (the file there, if any, is unchanged)"
    )
    assert not weights.exists() and not _temporaries(run_dir)
    # A config without recorded weights is no finished run.
    assert run_folder.state(run_dir) == run_folder.FRESH
    monkeypatch.undo()
    assert _train(run_dir, "--epochs", "1") == 0
    assert "recorded no epoch: it starts anew" in capsys.readouterr().out
    assert run_folder.state(run_dir) == run_folder.FINISHED


@pytest.mark.slow  # the quick twin: ..._at_the_first_checkpoint_...
def test_a_full_disk_while_going_on_keeps_the_backup_to_resume_from(
    finished, monkeypatch, capsys
):
    # Epoch 2's backup is written, epoch 3's does not fit.
    failed = _full_disk(monkeypatch, "epoch3-batch0.weights.h5")
    with pytest.raises(SystemExit) as exit_info:
        _train(finished, "--epochs", "3")
    assert exit_info.value.code == 1 and failed
    backup = finished / training.BACKUP_DIR
    assert _last_error_line(capsys).endswith(
        f"could not write {backup}/epoch3-batch0.weights.h5: {NO_SPACE} "
        "(the file there, if any, is unchanged)"
    )
    assert run_files.read_backup(finished)[1] == 2
    assert not _temporaries(finished)
    monkeypatch.undo()
    assert _train(finished, "--epochs", "3") == 0
    out = capsys.readouterr().out
    assert "Resuming the interrupted run" in out
    assert "Epoch 3/3" in out and "Epoch 2/3" not in out
    progress = run_files.checked_progress(finished)
    assert progress["epochs"] == 3 and progress["finished"] is True
    assert not backup.exists()


# -- damaged files ----------------------------------------------------------


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _refused(run_dir, capsys, *flags):
    """Runs the tiny training again: it must be refused (exit 2) before
    any file of `run_dir` changes. Returns the error line."""
    before = _files(run_dir)
    with pytest.raises(SystemExit) as exit_info:
        _train(run_dir, *flags)
    assert exit_info.value.code == 2
    assert _files(run_dir) == before
    return _last_error_line(capsys)


def test_an_interrupted_run_with_a_damaged_progress_is_refused_first(
    interrupted, capsys
):
    progress = interrupted / training.PROGRESS_FILE
    _truncate(progress)
    error = _refused(interrupted, capsys, "--epochs", "2")
    assert f"{progress} is not readable JSON" in error
    assert "--overwrite" in error and "Traceback" not in error


def test_a_damaged_backup_is_refused_with_what_to_do(interrupted, capsys):
    backup = interrupted / training.BACKUP_DIR
    (weights,) = backup.glob("*.weights.h5")
    _truncate(weights)
    error = _refused(interrupted, capsys, "--epochs", "2")
    assert f"{weights} is " in error and "cut short or changed" in error
    assert f"Delete {backup} to go on" in error
    # Done as told: the run goes on from the epoch it recorded.
    shutil.rmtree(backup)
    assert _train(interrupted, "--epochs", "2") == 0
    out = capsys.readouterr().out
    assert "Continuing the run" in out and "Epoch 1/2" not in out


def test_truncated_weights_of_a_finished_run_are_refused(finished, capsys):
    weights = finished / training.WEIGHTS_FILE
    _truncate(weights)
    error = _refused(finished, capsys, "--epochs", "1")
    assert f"{weights} is " in error and "cut short or changed" in error
    assert "--overwrite" in error


def test_an_older_run_folder_is_checked_then_recorded(finished, capsys):
    """A folder written before progress.json recorded its weights: a whole
    weights file counts as a finished run (and is recorded); a truncated
    one, beside its config, does not."""
    progress = finished / training.PROGRESS_FILE
    progress.write_text(json.dumps({"epochs": 1}))  # the old record
    weights = finished / training.WEIGHTS_FILE
    whole = weights.read_bytes()
    weights.write_bytes(whole[: len(whole) // 2])
    error = _refused(finished, capsys, "--epochs", "1")
    assert f"{weights} is not a whole weights file" in error
    progress.unlink()  # older still: no progress.json at all
    assert _refused(finished, capsys, "--epochs", "1") == error
    weights.write_bytes(whole)
    assert _train(finished, "--epochs", "1") == 0
    assert "is complete (1 epoch)" in capsys.readouterr().out
    recorded = run_files.checked_progress(finished)
    assert recorded["epochs"] == 1
    assert recorded["files"][training.WEIGHTS_FILE]["size"] == len(whole)


# -- other flags on resume --------------------------------------------------


@pytest.mark.parametrize(
    "flags, change",
    [
        (["--hidden-units", "16"], "hidden_units: 8 there, 16 now"),
        (["--batch-size", "4"], "batch_size: 64 there, 4 now"),
        (
            ["--precision", "mixed_bfloat16"],
            "precision: 'float32' there, 'mixed_bfloat16' now",
        ),
    ],
)
def test_an_interrupted_run_refuses_other_flags(
    interrupted, capsys, flags, change
):
    error = _refused(interrupted, capsys, "--epochs", "2", *flags)
    assert f"{interrupted} holds an interrupted run with another " in error
    assert change in error and "--overwrite" in error


def test_an_interrupted_run_takes_new_epochs(interrupted, capsys):
    assert _train(interrupted, "--epochs", "3") == 0
    out = capsys.readouterr().out
    assert "Resuming the interrupted run" in out and "(up to epoch 3)" in out
    assert "Epoch 2/3" in out and "Epoch 1/3" not in out
    assert run_files.checked_progress(interrupted)["epochs"] == 3
    # The logs of the epoch before the interruption, then the resumed two.
    rows = training_logs.history_rows(interrupted)
    assert [int(row["epoch"]) for row in rows] == [0, 1, 2]
    found = training_logs.summaries(interrupted)
    assert training_logs.steps(found, "train", "epoch_loss") == [0, 1, 2]
    attention = training_logs.steps(found, "examples", "attention/0")
    assert attention == [0, 1, 2]
