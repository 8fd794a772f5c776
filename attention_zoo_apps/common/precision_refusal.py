"""`--export-precision int8` refused before training, not after it.

Whether a model has layers an int8 export quantizes
(`attention_zoo.export.check_model_precision`) is known once the model
is built, which `fit` does after reading the vocabularies.
`ExportPrecisionCheck` asks as training begins, before the first epoch;
`refusals` ends the command with one line naming the flag and exit code
2, as the usage errors of the flags read earlier do.
"""

import contextlib
import sys

import keras

from attention_zoo.export import Int8Unavailable
from attention_zoo.export import NothingToQuantize
from attention_zoo.export import check_model_precision


class ExportPrecisionCheck(keras.callbacks.Callback):
    """Raises `NothingToQuantize` (or `Int8Unavailable`) as training
    begins (the model built, no epoch trained) when `bundle`'s model
    cannot have the export `precision`. First in `fit`'s callbacks, so
    that the others have written nothing yet."""

    def __init__(self, bundle, precision):
        super().__init__()
        self._bundle = bundle
        self._precision = precision

    def on_train_begin(self, logs=None):
        check_model_precision(self._bundle.model, self._precision)


@contextlib.contextmanager
def refusals(command):
    """Reports a `NothingToQuantize` or `Int8Unavailable` raised inside as
    `command`'s error: one line on stderr, `--export-precision int8` and
    the reason, exit code 2."""
    try:
        yield
    except (NothingToQuantize, Int8Unavailable) as error:
        if sys.stdout.isatty():
            print(flush=True)  # below the progress bar
        print(
            f"{command}: error: --export-precision int8: {error}",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
