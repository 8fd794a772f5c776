"""Checkpoints and resume, the same for every application.

`checkpoint_callbacks(directory)` gives `fit` a weights checkpoint per
epoch and `BackupAndRestore`, so an interrupted run restarted with the same
directory goes on from its last finished epoch. `load_weights` restores a
`model.weights.h5` that includes the optimizer's state.
"""

import os

import keras

WEIGHTS_FILE = "model.weights.h5"
BACKUP_DIR = "backup"


def checkpoint_callbacks(directory):
    """`ModelCheckpoint` (weights, every epoch) and `BackupAndRestore`."""
    os.makedirs(directory, exist_ok=True)
    return [
        keras.callbacks.ModelCheckpoint(
            os.path.join(directory, WEIGHTS_FILE), save_weights_only=True
        ),
        keras.callbacks.BackupAndRestore(os.path.join(directory, BACKUP_DIR)),
    ]


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
