"""Checkpoints and resume, the same for every application.

`checkpoint_callbacks(directory)` gives `fit` a weights checkpoint per
epoch, the count of epochs trained (`progress.json`) and
`BackupAndRestore`, so an interrupted run restarted with the same
directory goes on from its last finished epoch. `load_weights` restores a
`model.weights.h5` that includes the optimizer's state.
`worker_directory` is where a worker of a multi-worker cluster writes
them: the run directory on the chief, a temporary copy elsewhere.
"""

import json
import os
import shutil
import tempfile

import keras

from applications.common import distribute

WEIGHTS_FILE = "model.weights.h5"
BACKUP_DIR = "backup"
# {"epochs": the epochs the weights had, and early stopping's state}
PROGRESS_FILE = "progress.json"


def checkpoint_callbacks(directory, weights_model=None):
    """`SaveWeights` (`WEIGHTS_FILE`, every epoch, of `weights_model`,
    else the model `fit` trains), the epoch count after it
    (`PROGRESS_FILE`) and `BackupAndRestore` (of the model `fit` trains)."""
    os.makedirs(directory, exist_ok=True)
    return [
        SaveWeights(os.path.join(directory, WEIGHTS_FILE), weights_model),
        keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, _: write_progress(
                directory, epochs=epoch + 1
            )
        ),
        keras.callbacks.BackupAndRestore(os.path.join(directory, BACKUP_DIR)),
    ]


class SaveWeights(keras.callbacks.Callback):
    """Saves a model's weights (with its optimizer's state) to `path`
    after every epoch, as `ModelCheckpoint(path, save_weights_only=True)`
    does, but of `weights_model` when given rather than of the model `fit`
    trains: a captioner trained on cached features (a model sharing its
    trainable weights) saves the whole captioner."""

    def __init__(self, path, weights_model=None):
        super().__init__()
        self.path = path
        self.weights_model = weights_model

    def on_epoch_end(self, epoch, logs=None):
        (self.weights_model or self.model).save_weights(self.path)


def read_progress(directory):
    """The dict in `directory`'s `PROGRESS_FILE` ({} when there is none)."""
    path = os.path.join(directory, PROGRESS_FILE)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def write_progress(directory, **fields):
    """Updates `fields` of `directory`'s `PROGRESS_FILE`: `epochs`, the
    epochs the weights there had, and what `early_stopping` records
    (written whole, then renamed: an interrupt leaves the old file)."""
    progress = {**read_progress(directory), **fields}
    path = os.path.join(directory, PROGRESS_FILE)
    with open(path + ".tmp", "w") as f:
        json.dump(progress, f)
    os.replace(path + ".tmp", path)


def has_backup(directory):
    """Whether `directory` holds an interrupted run to resume."""
    return os.path.exists(os.path.join(directory, BACKUP_DIR))


def load_weights(model, directory):
    """Loads `directory/model.weights.h5` into a compiled `model`.

    The file also holds the optimizer's state: its slots are built first
    so that they load (and training can go on).
    """
    model.optimizer.build(model.trainable_variables)
    model.load_weights(os.path.join(directory, WEIGHTS_FILE))
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
    if has_backup(directory):
        shutil.copytree(
            os.path.join(directory, BACKUP_DIR),
            os.path.join(temporary, BACKUP_DIR),
        )
    return temporary
