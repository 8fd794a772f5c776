"""Training you can watch (`attention_zoo_apps.common.watching`): a run of
`attention-zoo train APP` logs each epoch in its run folder, in
`history.csv` and TensorBoard's event files (losses, metrics, the
learning rate, the attention of a few validation examples as images and
the model's output for them as text); a run that goes on appends to
both. Each application's `watch_examples` hook gives the examples' text
and attention."""

import numpy as np
import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.commands import train_steps
from attention_zoo_apps.common import distribute
from attention_zoo_apps.common import run_folder
from attention_zoo_apps.common import watching
from tests.support import tiny_bundles
from tests.support import tiny_runs
from tests.support import training_logs
from tests.support.shared_folders import copy_of

APP = "entailment"

SLOW = pytest.mark.slow


def _check_epochs(run_dir, epochs):
    """`run_dir`'s logs hold epochs `0 .. epochs - 1` once each."""
    rows = training_logs.history_rows(run_dir)
    assert [int(row["epoch"]) for row in rows] == list(range(epochs))
    assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(rows[0])
    found = training_logs.summaries(run_dir)
    every = list(range(epochs))
    for run, tag in (
        ("train", "epoch_loss"),
        ("train", "epoch_learning_rate"),
        ("validation", "epoch_loss"),
    ):
        assert training_logs.steps(found, run, tag) == every, (run, tag)
    for step, plugin, value in found[("train", "epoch_loss")]:
        assert plugin == "scalars"
        assert float(value) == pytest.approx(float(rows[step]["loss"]))
    for _, _, value in found[("train", "epoch_learning_rate")]:
        assert float(value) == pytest.approx(1e-3)  # the synthetic default
    shown = watching.WATCHED_EXAMPLES
    for i in range(shown):
        attention = found[(watching.EXAMPLES_RUN, f"attention/{i}")]
        text = found[(watching.EXAMPLES_RUN, f"output/{i}")]
        assert [step for step, _, _ in attention] == every
        assert [step for step, _, _ in text] == every
        _, plugin, image = attention[-1]
        # width, height, then the encoded PNG
        assert plugin == "images" and image[2].startswith(b"\x89PNG")
        assert int(image[0]) > 50 and int(image[1]) > 50
        _, plugin, line = text[-1]
        assert plugin == "text" and b" / " in line.item()
    assert (watching.EXAMPLES_RUN, f"output/{shown}") not in found


def test_a_run_logs_every_epoch_and_a_run_that_goes_on_appends(
    shared, tmp_path, capsys
):
    """The session's finished 1-epoch run logged its epoch; trained on
    to 2 epochs it appends the second; `--overwrite` starts the logs
    anew."""
    built = tiny_runs.finished_run(shared, APP) / "run"
    _check_epochs(built, 1)
    run_dir = copy_of(built, tmp_path / "run")
    capsys.readouterr()

    assert tiny_runs.train(APP, run_dir, "--epochs", "2", *tiny_runs.LOGS) == 0
    out = capsys.readouterr().out
    logs = run_dir / watching.LOGS_DIR
    assert f"tensorboard --logdir {logs}" in out.splitlines()[-1]
    _check_epochs(run_dir, 2)


def test_overwrite_removes_the_logs(tmp_path):
    (tmp_path / watching.HISTORY_FILE).write_text("epoch,loss\n0,1.0\n")
    (tmp_path / watching.LOGS_DIR / "train").mkdir(parents=True)
    (tmp_path / watching.LOGS_DIR / "train" / "events.out.tfevents.1").touch()
    run_folder.clear(tmp_path)
    assert sorted(tmp_path.iterdir()) == []


class _Recorded:
    """A bundle's stand-in for `fit_run`: its `fit` keeps the callbacks."""

    application = APP
    initial_epoch = 0
    config = type("Config", (), {"epochs": 1})

    def fit(self, *examples, callbacks=(), **kwargs):
        self.callbacks = list(callbacks)


@pytest.mark.parametrize(
    "chief, flags, expected",
    [
        (True, [], ["CSVLogger", "EpochTensorBoard", "WatchExamples"]),
        (True, ["--no-tensorboard"], ["CSVLogger"]),
        (False, [], []),
    ],
)
def test_only_the_chief_logs(chief, flags, expected, tmp_path, monkeypatch):
    monkeypatch.setattr(distribute, "is_chief", lambda strategy: chief)
    parser = registry.get(APP).flags().train_parser()
    args = parser.parse_args(["--run-dir", str(tmp_path), *flags])
    bundle = _Recorded()
    assert train_steps.fit_run(bundle, args, None, [], watched=[]) is chief
    assert [type(c).__name__ for c in bundle.callbacks] == expected


def _validation(application, count):
    """`count` generated examples as the bundle's `fit` takes
    `validation`."""
    arguments = registry.get(application).fit_arguments(count, seed=7)
    return arguments[0] if len(arguments) == 1 else arguments


# Entailment's in the quick run (its logs are read back above too), the
# others in the slow tier.
@pytest.mark.parametrize(
    "application",
    [
        name if name == "entailment" else pytest.param(name, marks=SLOW)
        for name in tiny_bundles.APPLICATIONS
    ],
)
def test_watch_examples_gives_text_and_labelled_attention(application, shared):
    bundle = tiny_bundles.tiny_bundle(application, shared)
    shown = bundle.watch_examples(_validation(application, 4), 2)
    assert len(shown) == 2
    for example in shown:
        assert isinstance(example["text"], str) and example["text"]
        attention = np.asarray(example["attention"])
        rows, columns = example["rows"], example["columns"]
        assert attention.shape == (len(rows), len(columns))
        assert len(rows) and len(columns)
        assert all(isinstance(label, str) for label in rows + columns)
        assert isinstance(example["row_name"], str)
        assert isinstance(example["column_name"], str)
        assert np.all(np.isfinite(attention))
        # Weights of a distribution: each row sums to at most 1 (the
        # captioner's attention may look at less than the whole image).
        assert np.all(attention >= 0)
        assert np.all(attention.sum(axis=1) <= 1 + 1e-3)
    assert bundle.watch_examples(_validation(application, 4), 0) == []
