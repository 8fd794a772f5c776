"""Checkpoints and resume, the same for every application.

`checkpoint_callbacks(directory)` gives `fit` a weights checkpoint per
epoch recorded in `progress.json` (`SaveWeights`) and a backup
(`RunBackup`, Keras's `BackupAndRestore` written aside then renamed), so
an interrupted run restarted with the same directory goes on from its
last finished epoch; every file is written whole and checked when read
(`attention_zoo_apps.common.run_files`). `load_weights` restores a
`model.weights.h5` that includes the optimizer's state.
`worker_directory` is where a worker of a multi-worker cluster writes
them: the run directory on the chief, a temporary copy elsewhere.
"""

import os
import shutil
import tempfile

import keras

from attention_zoo_apps.common import distribute
from attention_zoo_apps.common import run_files

# The run files' names and progress, here as before `run_files` held them.
from attention_zoo_apps.common.run_files import BACKUP_DIR
from attention_zoo_apps.common.run_files import PROGRESS_FILE  # noqa: F401
from attention_zoo_apps.common.run_files import WEIGHTS_FILE
from attention_zoo_apps.common.run_files import RunFileError
from attention_zoo_apps.common.run_files import read_progress  # noqa: F401
from attention_zoo_apps.common.run_files import write_progress


def checkpoint_callbacks(directory, weights_model=None, early_stopping=None):
    """`SaveWeights` (`WEIGHTS_FILE` and the epoch count in
    `PROGRESS_FILE`, every epoch, of `weights_model`, else the model `fit`
    trains), then `early_stopping` (a `RunEarlyStopping` of `directory`,
    when given: its state is saved before the backup is) and `RunBackup`
    (of the model `fit` trains; it marks the run finished when `fit`
    ends)."""
    os.makedirs(directory, exist_ok=True)
    callbacks = [SaveWeights(directory, weights_model)]
    if early_stopping is not None:
        callbacks.append(early_stopping)
    return callbacks + [RunBackup(directory)]


class SaveWeights(keras.callbacks.Callback):
    """Saves a model's weights (with its optimizer's state) to
    `directory/model.weights.h5` after every epoch, as
    `ModelCheckpoint(path, save_weights_only=True)` does, but written aside
    and recorded with the epoch count in `progress.json`
    (`run_files.write_weights`), and of `weights_model` when given rather
    than of the model `fit` trains: a captioner trained on cached features
    (a model sharing its trainable weights) saves the whole captioner."""

    def __init__(self, directory, weights_model=None):
        super().__init__()
        self.directory = directory
        self.weights_model = weights_model

    def on_train_begin(self, logs=None):
        run_files.begin_progress(self.directory)

    def on_epoch_end(self, epoch, logs=None):
        run_files.write_weights(
            self.directory,
            WEIGHTS_FILE,
            self.weights_model or self.model,
            epochs=epoch + 1,
        )


class RunBackup(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` in `directory/backup`, whose
    files are never half written: each backup is a new weights file and
    then the metadata naming it with its size and checksum
    (`run_files.write_backup`); a damaged backup is refused with a
    `RunFileError` naming the file rather than loaded. When `fit` ends,
    `progress.json` is marked `finished` and the backup removed."""

    def __init__(self, directory):
        super().__init__(os.path.join(directory, BACKUP_DIR))
        self.directory = directory

    def on_train_begin(self, logs=None):
        self._load_model()

    def _load_model(self):
        if not self.model.built:
            raise ValueError(
                "To use the BackupAndRestore callback, the model must be "
                "built before `fit()`."
            )
        backup = run_files.read_backup(self.directory)
        if backup is None:
            return
        path, epoch = backup
        optimizer = self.model.optimizer
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        try:
            self.model.load_weights(path)
        except (OSError, RuntimeError, ValueError) as error:
            raise RunFileError(
                path,
                f"cannot be loaded ({str(error).splitlines()[0]})",
                run_files.backup_advice(self.directory),
            ) from None
        self.model._initial_epoch = epoch

    def _save_model(self):
        run_files.write_backup(
            self.directory,
            self.model,
            self._current_epoch,
            self._last_batch_seen,
        )

    def on_train_end(self, logs=None):
        write_progress(self.directory, finished=True)
        run_files.remove_backup(self.directory)


def has_backup(directory):
    """Whether `directory` holds an interrupted run to resume."""
    return os.path.exists(os.path.join(directory, BACKUP_DIR))


def load_weights(model, directory):
    """Loads `directory/model.weights.h5` into a compiled `model`.

    The file also holds the optimizer's state: its slots are built first
    so that they load (and training can go on). It is checked first
    (`run_files.checked_progress`): a damaged file raises a `RunFileError`
    naming it.
    """
    run_files.checked_progress(directory)
    path = os.path.join(directory, WEIGHTS_FILE)
    model.optimizer.build(model.trainable_variables)
    try:
        model.load_weights(path)
    except (OSError, RuntimeError) as error:
        raise RunFileError(
            path, f"cannot be loaded ({str(error).splitlines()[0]})"
        ) from None
    return model


def worker_directory(directory, strategy=None):
    """The folder this process writes `directory`'s checkpoints to.

    `directory` itself on the chief (`distribute.is_chief`); on the other
    workers of a multi-worker cluster a new temporary folder (remove it
    after `fit`), as the tf.distribute guide recommends: every worker runs
    the checkpoint callbacks, only the chief's files are kept. The chief's
    `backup/` is copied into it first, so that every worker's
    `BackupAndRestore` resumes at the same epoch (all workers must see
    `directory`: a shared file system).
    """
    if distribute.is_chief(strategy):
        return directory
    temporary = tempfile.mkdtemp(
        prefix=f"attention-zoo-worker{distribute.task_id(strategy)}-"
    )
    if os.path.isdir(os.path.join(directory, BACKUP_DIR)):
        shutil.copytree(
            os.path.join(directory, BACKUP_DIR),
            os.path.join(temporary, BACKUP_DIR),
        )
    return temporary
