"""`--strategy`: strategies, global batches, chief-only checkpoints, and
training under `mirrored` (two logical CPUs) and `multi-worker` (two
processes) against the default strategy."""

import json
import os
import socket
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import cli
from attention_zoo_apps.common import distribute
from attention_zoo_apps.common import training
from attention_zoo_apps.ehr.config import EHRConfig
from attention_zoo_apps.ehr.risk_model import RiskModel
from tests.support import distributed_runs

slow = pytest.mark.slow


def _fake_strategy(task_type=None, task_id=None, jobs=("worker",), replicas=1):
    """A stand-in with the attributes `distribute` reads."""
    cluster = {job: ["host:1", "host:2"] for job in jobs}
    resolver = types.SimpleNamespace(
        task_type=task_type,
        task_id=task_id,
        cluster_spec=lambda: tf.train.ClusterSpec(cluster),
    )
    return types.SimpleNamespace(
        cluster_resolver=resolver, num_replicas_in_sync=replicas
    )


def _output(completed):
    out, err = completed.stdout[-3000:], completed.stderr[-3000:]
    return f"stdout:\n{out}\nstderr:\n{err}"


# -- strategies and flags ---------------------------------------------------


def test_make_strategy_rejects_an_unknown_name():
    with pytest.raises(ValueError, match="name"):
        distribute.make_strategy("gpu")


def test_a_process_gets_one_strategy_per_name():
    # A second MirroredStrategy over the same devices would reuse the
    # first one's collective keys.
    mirrored = distribute.make_strategy("mirrored")
    assert distribute.make_strategy("mirrored") is mirrored
    assert distribute.make_strategy() is tf.distribute.get_strategy()


def test_multi_worker_needs_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        distribute.make_strategy("multi-worker")
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {}}')
    with pytest.raises(ValueError, match="'task'"):
        distribute.make_strategy("multi-worker")


def test_train_without_tf_config_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "ehr", "--strategy", "multi-worker"])
    assert exit_info.value.code == 2
    assert "TF_CONFIG" in capsys.readouterr().err


def test_data_parallel_on_tensorflow_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "ehr", "--distribution", "data-parallel"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "KERAS_BACKEND=jax" in error and "--strategy mirrored" in error


@pytest.mark.parametrize("app", sorted(cli.TRAINERS))
def test_train_help_documents_strategy_and_global_batch(app, capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", app, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--strategy {default,mirrored,multi-worker,tpu}" in text
    assert "batch-size x the number of replicas" in text


def test_tpu_without_a_tpu_is_a_clear_error(tmp_path):
    # A subprocess: looking for a TPU starts TensorFlow's runtime.
    completed = distributed_runs.run(
        "cli", "1", "train", "ehr", "--strategy", "tpu",
        "--run-dir", str(tmp_path),
        env={"TPU_NAME": "local"},
    )  # fmt: skip
    assert completed.returncode == 2, _output(completed)
    assert "No TPU found for the 'tpu' strategy" in completed.stderr


def test_global_batch_is_the_batch_per_replica_times_replicas():
    four = _fake_strategy(replicas=4)
    assert distribute.global_batch_size(8, four) == 32
    assert distribute.global_batch_size(8) == 8
    assert RiskModel(EHRConfig(batch_size=8)).global_batch_size == 8
    bundle = RiskModel(EHRConfig(batch_size=8), strategy=four)
    assert bundle.global_batch_size == 32


@pytest.mark.parametrize(
    "task_type, task_id, jobs, chief",
    [
        (None, None, ("worker",), True),  # no cluster
        ("worker", 0, ("worker",), True),
        ("worker", 1, ("worker",), False),
        ("chief", 0, ("chief", "worker"), True),
        ("worker", 0, ("chief", "worker"), False),
    ],
)
def test_is_chief(task_type, task_id, jobs, chief):
    strategy = _fake_strategy(task_type, task_id, jobs)
    assert distribute.is_chief(strategy) is chief
    assert distribute.is_chief(None)


def test_only_the_chief_writes_the_run_directory(tmp_path):
    run_dir = str(tmp_path / "run")
    os.makedirs(os.path.join(run_dir, training.BACKUP_DIR))
    with open(os.path.join(run_dir, training.BACKUP_DIR, "x.json"), "w") as f:
        f.write("{}")
    chief = _fake_strategy("worker", 0)
    assert training.worker_directory(run_dir, chief) == run_dir
    other = training.worker_directory(run_dir, _fake_strategy("worker", 1))
    try:
        assert other != run_dir and not other.startswith(run_dir)
        # The chief's backup, so that the worker resumes at its epoch.
        backup = os.path.join(other, training.BACKUP_DIR, "x.json")
        assert os.path.exists(backup)
    finally:
        import shutil

        shutil.rmtree(other)


def test_a_model_built_outside_the_strategy_is_rejected():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    bundle = RiskModel(EHRConfig(), model=model, strategy=strategy)
    with pytest.raises(ValueError, match="strategy.scope"):
        bundle.ensure_model()


# -- training under mirrored and multi-worker --------------------------------


# Every application's comparison is in the slow tier (a run of each in
# two processes), all of them in one `distributed_runs compare`; the quick
# run checks the strategies' set-up above.
COMPARED = ("entailment", "translation")


@pytest.fixture(scope="module")
def comparisons():
    """`comparisons(app)`: what `distributed_runs compare` printed for
    APP, run once per module for all of `COMPARED`."""
    printed = {}

    def get(app):
        if not printed:
            completed = distributed_runs.run(
                "compare", *COMPARED, timeout=300 * len(COMPARED)
            )
            assert completed.returncode == 0, _output(completed)
            last_line = completed.stdout.strip().splitlines()[-1]
            printed.update(json.loads(last_line))
        return printed[app]

    return get


# Translation (padding masks, each replica averaging over its own tokens)
# and entailment (a classifier); captioning and EHR train under
# `mirrored` in `test_hard_attention_trains_under_mirrored` and
# `test_train_ehr_with_mirrored_reports_and_exports`.
@pytest.mark.parametrize(
    "app",
    [pytest.param(app, marks=slow) for app in COMPARED],
)
def test_mirrored_matches_default_on_the_same_global_batches(app, comparisons):
    runs = comparisons(app)
    default, mirrored = runs["default"], runs["mirrored"]
    assert (default["replicas"], mirrored["replicas"]) == (1, 2)
    global_batch = 2 * distributed_runs.BATCH
    assert default["global_batch_size"] == global_batch
    assert mirrored["global_batch_size"] == global_batch
    steps = distributed_runs.STEPS * distributed_runs.EPOCHS
    assert len(default["losses"]) == len(mirrored["losses"]) == steps
    # Equal up to float rounding; with padding masks (translation,
    # captioning) each replica averages over its own unmasked tokens,
    # which moves the loss by about 2e-4 of itself.
    np.testing.assert_allclose(mirrored["losses"], default["losses"], rtol=1e-3)
    assert mirrored["inference"]  # decoding / prediction ran


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@slow
def test_multi_worker_workers_end_with_identical_weights(tmp_path):
    """Two workers on localhost, interrupted after an epoch and resumed:
    both resume at the chief's epoch and finish with the same weights;
    only the chief's files are in the run directory."""
    workers = [f"localhost:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        temporary = tmp_path / f"tmp{index}"
        temporary.mkdir()
        tf_config = {
            "cluster": {"worker": workers},
            "task": {"type": "worker", "index": index},
        }
        env = {"TF_CONFIG": json.dumps(tf_config), "TMPDIR": str(temporary)}
        processes.append(
            distributed_runs.start(
                "multi-worker", "ehr", str(tmp_path), env=env
            )
        )
    try:
        outputs = [process.communicate(timeout=240) for process in processes]
    finally:
        for process in processes:
            process.kill()
    for process, (out, err) in zip(processes, outputs):
        assert process.returncode == 0, f"{out[-3000:]}\n{err[-3000:]}"
    for index in range(2):
        with open(tmp_path / f"epochs-{index}.json") as f:
            assert json.load(f) == {"resumed_epochs": [1], "replicas": 2}
        # The worker's temporary checkpoint folder is gone.
        assert not os.listdir(tmp_path / f"tmp{index}")
    chief = np.load(tmp_path / "weights-0.npz")
    worker = np.load(tmp_path / "weights-1.npz")
    assert chief.files and sorted(chief.files) == sorted(worker.files)
    for name in chief.files:
        np.testing.assert_array_equal(chief[name], worker[name])
    run_files = sorted(os.listdir(tmp_path / "run"))
    assert "model.weights.h5" in run_files and "backup" not in run_files


@slow
def test_train_ehr_with_mirrored_reports_and_exports(tmp_path):
    export_dir = tmp_path / "saved_models"
    completed = distributed_runs.run(
        "cli", "2", "train", "ehr", "--strategy", "mirrored",
        "--synthetic-patients", "80", "--epochs", "1",
        "--embedding-dim", "8", "--units", "8", "--batch-size", "8",
        "--run-dir", str(tmp_path / "run"), "--export", str(export_dir),
    )  # fmt: skip
    assert completed.returncode == 0, _output(completed)
    assert "test: AUROC" in completed.stdout
    assert (export_dir / "1" / "saved_model.pb").exists()
    with open(tmp_path / "run" / "config.json") as f:
        assert json.load(f)["batch_size"] == 8  # per replica, as given
