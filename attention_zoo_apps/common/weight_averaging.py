"""Averaging the weights of a run's last epochs, as fairseq's
`average_checkpoints.py` and OpenNMT-tf's `average_checkpoints` do
(`attention-zoo train translation --average-checkpoints N`).

- `KeepEpochWeights(directory, count)`: after every epoch, the model's
  weights as `directory/epochs/epoch-K.npz` (`np.savez`, written whole:
  `atomic_file.write_bytes`); only the last `count` are kept. A run that
  starts, resumes or goes on at epoch `E` first removes the files of
  epochs after `E` that an earlier run left.
- `averaged_weights(directory, count)`: the element-wise mean of the last
  `count` epochs' weights, and those epochs.
- `clear(directory)`: removes the files (`--overwrite`).

The run's own `model.weights.h5` stays the last epoch's: the average is
what the command evaluates and exports, made again from the files
whenever a finished run is evaluated.
"""

import io
import os
import re
import shutil
import zipfile

import keras
import numpy as np

from attention_zoo.export.atomic_file import write_bytes
from attention_zoo_apps.common.run_files import START_ANEW
from attention_zoo_apps.common.run_files import RunFileError

EPOCHS_DIR = "epochs"
_FILE = re.compile(r"^epoch-(\d+)\.npz$")


def epoch_files(directory):
    """`{epoch: path}` of the weights files in `directory/epochs`."""
    folder = os.path.join(directory, EPOCHS_DIR)
    if not os.path.isdir(folder):
        return {}
    found = {}
    for name in os.listdir(folder):
        match = _FILE.match(name)
        if match:
            found[int(match[1])] = os.path.join(folder, name)
    return found


def clear(directory):
    """Removes `directory/epochs`."""
    shutil.rmtree(os.path.join(directory, EPOCHS_DIR), ignore_errors=True)


class KeepEpochWeights(keras.callbacks.Callback):
    """Writes the model's weights after every epoch, keeping the last
    `count` (see the module's doc).

    Args:
        directory: str, the run folder.
        count: int, how many epochs' weights to keep.
    """

    def __init__(self, directory, count):
        super().__init__()
        self.directory = directory
        self.count = count
        self._started = False

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:  # files past this run's start are stale
            self._started = True
            for number, path in epoch_files(self.directory).items():
                if number > epoch:
                    os.remove(path)

    def on_epoch_end(self, epoch, logs=None):
        buffer = io.BytesIO()
        np.savez(buffer, *self.model.get_weights())
        folder = os.path.join(self.directory, EPOCHS_DIR)
        os.makedirs(folder, exist_ok=True)
        number = epoch + 1
        write_bytes(
            os.path.join(folder, f"epoch-{number}.npz"), buffer.getvalue()
        )
        for older, path in epoch_files(self.directory).items():
            if older <= number - self.count:
                os.remove(path)


def averaged_weights(directory, count):
    """The mean weights of the last `count` epochs kept in `directory`.

    Returns:
        `(weights, epochs)`: a list of arrays (each of its epochs'
        dtype), None when no file is there, and the epochs averaged
        (ascending; fewer than `count` when fewer were kept).

    Raises:
        RunFileError: a file that cannot be read, or whose weights do not
            match the others', naming it.
    """
    files = epoch_files(directory)
    epochs = sorted(files)[-count:]
    if not epochs:
        return None, []
    kept = []
    for number in epochs:
        path = files[number]
        try:
            # Opened here: `np.load(path)` leaves a damaged file open.
            with open(path, "rb") as file, np.load(file) as data:
                weights = [data[f"arr_{i}"] for i in range(len(data.files))]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            raise RunFileError(
                path, f"cannot be read ({error})", START_ANEW
            ) from None
        if kept and [w.shape for w in weights] != [w.shape for w in kept[0]]:
            raise RunFileError(
                path, "holds other weights than the other epochs", START_ANEW
            )
        kept.append(weights)
    mean = [
        np.mean(np.stack(arrays).astype("float64"), axis=0).astype(
            arrays[0].dtype
        )
        for arrays in zip(*kept)
    ]
    return mean, epochs
