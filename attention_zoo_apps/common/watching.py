"""Training you can watch: what `attention-zoo train APP` logs in its run
folder, the same for every application.

- `history.csv`: one row per epoch, the losses and metrics
  (`keras.callbacks.CSVLogger`).
- `logs/`: TensorBoard's event files (`tensorboard --logdir RUN_DIR/logs`):
  `logs/train` and `logs/validation` hold the epoch losses, metrics and
  learning rate (`EpochTensorBoard`: Keras's `TensorBoard`, flushed each
  epoch); `logs/examples` holds, per epoch, the attention of a few fixed
  validation examples as images and the model's output for them as text
  (`WatchExamples`).

A resumed or continued run appends to both (the CSV row, a new event
file per run; steps are epochs counted from 0, so they go on where the
run stopped). `--overwrite` and a run that starts anew remove them
(`clear`). The bundle gives the examples' text and attention through its
hook `watch_examples(examples, count)`: the first `count` of `examples`
(what its `fit` takes as `validation`) as a list of dicts, each with
`text` (str) and, for a model with attention, `attention` (float array
`(rows, columns)`), `rows` and `columns` (the labels of its rows and
columns, lists of str) and `row_name` and `column_name` (its axes').
"""

import contextlib
import os
import shutil

import keras
import numpy as np
import tensorflow as tf

from attention_zoo_apps.common import plots

HISTORY_FILE = "history.csv"
LOGS_DIR = "logs"
# `LOGS_DIR`'s run of the watched examples' images and text.
EXAMPLES_RUN = "examples"
# The validation examples shown every epoch.
WATCHED_EXAMPLES = 3
# Their heatmaps' resolution: smaller and quicker than a saved figure's.
WATCHED_DPI = 80


def run_callbacks(bundle, run_dir, examples=None, tensorboard=True):
    """The callbacks that log a run in `run_dir`: `history.csv`, and with
    `tensorboard` the TensorBoard logs in `run_dir/logs`, the first
    `WATCHED_EXAMPLES` of `examples` (None: none) shown every epoch
    through `bundle.watch_examples`. Only the chief of a cluster logs:
    give them there alone (`distribute.is_chief`)."""
    callbacks = [
        keras.callbacks.CSVLogger(
            os.path.join(run_dir, HISTORY_FILE), append=True
        )
    ]
    if tensorboard:
        logs = os.path.join(run_dir, LOGS_DIR)
        # Per epoch only: no graph, no profile, no per-batch scalars.
        callbacks.append(EpochTensorBoard(logs, write_graph=False))
        if examples is not None:
            callbacks.append(
                WatchExamples(
                    bundle, examples, os.path.join(logs, EXAMPLES_RUN)
                )
            )
    return callbacks


def close(callbacks):
    """Closes the files of `run_callbacks`' `callbacks` that `fit` left
    open when it raised (an interrupted run): its `on_train_end` closes
    them when it returns."""
    for callback in callbacks:
        if isinstance(callback, (keras.callbacks.CSVLogger, WatchExamples)):
            callback.on_train_end()  # closes its file or writer, once
        elif isinstance(callback, EpochTensorBoard):
            callback._close_writers()


def logs_line(run_dir):
    """The line `train.py` prints after training: where the logs are and
    how to open them (None when the run has no TensorBoard logs)."""
    logs = os.path.join(run_dir, LOGS_DIR)
    history = os.path.join(run_dir, HISTORY_FILE)
    if not os.path.isdir(logs):
        return None
    return f"training logs: {history}; TensorBoard: tensorboard --logdir {logs}"


def clear(run_dir):
    """Removes `run_dir`'s `history.csv` and TensorBoard logs."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(run_dir, HISTORY_FILE))
    shutil.rmtree(os.path.join(run_dir, LOGS_DIR), ignore_errors=True)


class EpochTensorBoard(keras.callbacks.TensorBoard):
    """`keras.callbacks.TensorBoard` whose event files are flushed at the
    end of every epoch: a run that is killed keeps the epochs it logged
    (Keras flushes them when `fit` ends, or every two minutes)."""

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        for writer in self._writers.values():
            writer.flush()


class WatchExamples(keras.callbacks.Callback):
    """Logs a few fixed examples to TensorBoard at the end of every epoch:
    their attention as a heatmap image and the model's output as text.

    The examples go through `bundle.watch_examples(examples, count)` (see
    the module's doc) once per epoch, never per batch.

    Args:
        bundle: the `SavedBundle` being trained.
        examples: the examples, as the bundle's `fit` takes `validation`.
        log_dir: str, the folder of the event files.
        count: int, how many examples to show. Defaults to
            `WATCHED_EXAMPLES`.
    """

    def __init__(self, bundle, examples, log_dir, count=WATCHED_EXAMPLES):
        super().__init__()
        self.bundle = bundle
        self.examples = examples
        self.log_dir = log_dir
        self.count = count
        self._writer = None

    def on_train_begin(self, logs=None):
        self._writer = tf.summary.create_file_writer(self.log_dir)

    def on_epoch_end(self, epoch, logs=None):
        shown = self.bundle.watch_examples(self.examples, self.count)
        with self._writer.as_default(step=epoch):
            for i, example in enumerate(shown):
                tf.summary.text(f"output/{i}", example["text"])
                if np.size(example.get("attention", [])) == 0:
                    continue  # no attention, or no token
                # Coloured up to the largest weight: spread-out attention
                # (an untrained model's) shows its pattern too.
                top = max(float(np.max(example["attention"])), 1e-6)
                png = plots.heatmap_png(
                    example["columns"],
                    example["rows"],
                    example["attention"],
                    title=f"colours: weights from 0 to {top:.3g}",
                    x_label=example["column_name"],
                    y_label=example["row_name"],
                    dpi=WATCHED_DPI,
                    vmax=top,
                )
                image = tf.image.decode_png(png, channels=3)  # (H, W, 3)
                tf.summary.image(f"attention/{i}", image[None])
        self._writer.flush()

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
