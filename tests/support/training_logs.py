"""A run folder's training logs read back: `history.csv`'s rows and the
TensorBoard event files' summaries (`attention_zoo_apps.common.watching`),
with TensorFlow's own reader (`tf.compat.v1.train.summary_iterator`)."""

import csv
import glob
import os

import tensorflow as tf

from attention_zoo_apps.common import watching


def history_rows(run_dir):
    """`history.csv`'s rows, dicts of column -> str."""
    path = os.path.join(run_dir, watching.HISTORY_FILE)
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def event_files(run_dir):
    """Every TensorBoard event file under `run_dir`."""
    pattern = os.path.join(run_dir, "**", "events.out.tfevents.*")
    return sorted(glob.glob(pattern, recursive=True))


def summaries(run_dir):
    """`{(run, tag): [(step, plugin, value), ...]}` of the event files of
    `run_dir/logs` (`run`: the folder under `logs`, e.g. `train`), in
    the order written; `value` is the summary's tensor as NumPy."""
    found = {}
    logs = os.path.join(run_dir, watching.LOGS_DIR)
    for path in event_files(logs):
        run = os.path.relpath(os.path.dirname(path), logs)
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                found.setdefault((run, value.tag), []).append(
                    (
                        event.step,
                        value.metadata.plugin_data.plugin_name,
                        tf.make_ndarray(value.tensor),
                    )
                )
    return found


def steps(found, run, tag):
    """The steps (epochs from 0) of `summaries`' `(run, tag)`, sorted."""
    return sorted(step for step, _, _ in found.get((run, tag), []))
