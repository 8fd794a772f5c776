"""`RunEarlyStopping`: early stopping whose state lives in the run folder.

`--patience N` (`fit(..., patience=N)` in Python): training stops once
the validation loss has not improved for `N` epochs, and the best epoch's
weights are restored before evaluation and export, as Keras's
`EarlyStopping(restore_best_weights=True)` does.

With a run folder, the state (the best loss, its epoch, the epochs since)
is written to `progress.json` after every epoch and the best weights to
`best.weights.h5` (written aside and recorded, see
`attention_zoo_apps.common.run_files`), so a run that is interrupted and
resumed keeps its patience count and can still restore an epoch trained
before the interrupt. At the end `progress.json` records the epoch kept
(`best_epoch`) and whether training stopped early (`stopped_early`), and
`model.weights.h5` holds the kept epoch's weights.
"""

import math
import os

import keras

from attention_zoo.checks import check_positive_int
from attention_zoo_apps.common import run_files
from attention_zoo_apps.common.run_files import BEST_WEIGHTS_FILE
from attention_zoo_apps.common.run_files import WEIGHTS_FILE
from attention_zoo_apps.common.run_files import RunFileError

MONITOR = "val_loss"


class RunEarlyStopping(keras.callbacks.Callback):
    """Stops when `val_loss` has not improved for `patience` epochs and
    restores the best epoch's weights.

    Args:
        patience: int >= 1, epochs without improvement before stopping.
        directory: the run folder (see the module's doc), or None to keep
            the best weights in memory.
        resume: bool, go on from the state in `directory`'s
            `progress.json` (a resumed or continued run) rather than
            start afresh.
        weights_model: the model whose weights `directory`'s
            `model.weights.h5` holds, when it is not the one `fit` trains
            (see `training.SaveWeights`). Defaults to `None`: that one.
    """

    def __init__(
        self, patience, directory=None, resume=False, weights_model=None
    ):
        super().__init__()
        check_positive_int("patience", patience)
        self.patience = patience
        self.directory = directory
        self.resume = resume
        self.weights_model = weights_model

    def on_train_begin(self, logs=None):
        state = {}
        if self.directory and self.resume:
            state = run_files.read_progress(self.directory).get(
                "early_stopping", {}
            )
        self.best = state.get("best", math.inf)
        self.best_epoch = state.get("best_epoch", 0)
        self.wait = state.get("wait", 0)
        self.best_weights = None
        self.last_epoch = None
        self.stopped_early = False

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(MONITOR)
        if value is None:
            raise ValueError(
                f"Early stopping watches `{MONITOR}`, which this `fit` does "
                "not report: give it validation data."
            )
        self.last_epoch = epoch + 1
        if value < self.best:
            self.best, self.best_epoch, self.wait = float(value), epoch + 1, 0
            if self.directory:
                run_files.write_weights(
                    self.directory, BEST_WEIGHTS_FILE, self.model
                )
            else:
                self.best_weights = self.model.get_weights()
        else:
            self.wait += 1
        if self.wait >= self.patience:
            self.model.stop_training = True
            self.stopped_early = True
        if self.directory:
            run_files.write_progress(
                self.directory,
                early_stopping={
                    "best": self.best,
                    "best_epoch": self.best_epoch,
                    "wait": self.wait,
                },
            )

    def on_train_end(self, logs=None):
        if self.last_epoch is None:  # no epoch ran
            return
        if self.best_epoch != self.last_epoch:
            if self.directory:
                self._load_best_weights()
                run_files.write_weights(
                    self.directory,
                    WEIGHTS_FILE,
                    self.weights_model or self.model,
                )
            elif self.best_weights is not None:
                self.model.set_weights(self.best_weights)
        if self.directory:
            run_files.write_progress(
                self.directory,
                best_epoch=self.best_epoch,
                stopped_early=self.stopped_early,
            )
        stopped = "stopped early; " if self.stopped_early else ""
        print(
            f"Early stopping: {stopped}kept epoch {self.best_epoch} "
            f"({MONITOR} {self.best:.4f})"
        )

    def _load_best_weights(self):
        """Loads `best.weights.h5`, checked against its record."""
        run_files.checked_progress(self.directory, names=(BEST_WEIGHTS_FILE,))
        path = os.path.join(self.directory, BEST_WEIGHTS_FILE)
        try:
            self.model.load_weights(path)
        except (OSError, RuntimeError) as error:
            raise RunFileError(
                path, f"cannot be loaded ({str(error).splitlines()[0]})"
            ) from None
