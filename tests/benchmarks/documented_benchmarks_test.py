"""The performance pages' benchmarks that have no test of their own run
end to end, as the pages run them (`--out DIR`), on tiny sizes: one
repeat, small shapes (the module's size constants where it has no flag),
and the result file they write is one the pages can show.

The full runs take minutes to hours; these take seconds each, so they are
in the slow tier with the other end-to-end runs."""

import json
import os
import subprocess
import sys

import pytest

from benchmarks import harness
from benchmarks import pages
from tests.support.distributed_runs import ROOT

# module -> (argv, module constants replaced for the run)
TINY = {
    "attention_layers_bench": (
        ["--repeats", "1"],
        {"BATCH": 2, "QUERY_LENGTH": 3, "VALUE_LENGTH": 5, "WIDTH": 8},
    ),
    "multi_head_bench": (
        ["--repeats", "1"],
        {"BATCH": 2, "LENGTH": 4, "WIDTH": 8, "HEADS": 2, "KEY_DIM": 4},
    ),
    "greedy_decoding_bench": (
        ["--repeats", "1", "--batch-size", "2", "--max-length", "3"]
        + ["--source-length", "4", "--vocabulary-size", "11"],
        {},
    ),
    "wavenet_generation_bench": (
        ["--repeats", "1", "--stacks", "1", "--naive-samples", "2"]
        + ["--stream-steps", "4"],
        {},
    ),
    # Two applications, as its docstring's `--apps translation ehr`: each
    # one trains and exports twice.
    "export_latency": (
        ["--apps", "translation", "ehr", "--repeats", "2", "--batch", "2"]
        + ["--warmup", "1", "--units", "8", "--embedding-dim", "8"],
        {},
    ),
    # One policy of its docstring's two: the other builds and times the
    # same two models under another dtype policy (four compiles each).
    "translation_training_bench": (["--quick", "--policies", "float32"], {}),
}


def _numbers(value):
    """Every number in a result document."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [value]
    return []


def _check_result(folder, name):
    with open(os.path.join(folder, f"{name}.json")) as file:
        document = json.load(file)
    assert document["command"].startswith(f"python -m benchmarks.{name}")
    times = _numbers(document["result"])
    assert times and all(t >= 0 for t in times)
    # The benchmark's section of its performance page shows a table.
    (topic,) = [t for t in pages.TOPICS if name in [s.name for s in t.sections]]
    page = pages.page(topic, {(harness.BACKEND, name): document})
    section = page.split(f"## `{name}`")[1].split("\n## ")[0]
    assert "| --- |" in section, section
    with open(os.path.join(folder, f"{name}.txt")) as file:
        assert file.read().startswith("Command: `KERAS_BACKEND=")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TINY))
def test_a_documented_benchmark_runs_on_tiny_sizes(name, tmp_path, monkeypatch):
    module = __import__(f"benchmarks.{name}", fromlist=["main"])
    argv, constants = TINY[name]
    for constant, value in constants.items():
        assert hasattr(module, constant), constant
        monkeypatch.setattr(module, constant, value)
    module.main([*argv, "--out", str(tmp_path)])
    _check_result(tmp_path, name)


@pytest.mark.slow
def test_mirrored_throughput_runs_quick(tmp_path):
    # A process of its own: the benchmark splits the CPU into two logical
    # devices before TensorFlow starts. Two applications, as its
    # docstring's `--apps ehr entailment`: each trains three ways.
    command = [sys.executable, "-m", "benchmarks.mirrored_throughput"]
    completed = subprocess.run(
        [*command, "--quick", "--apps", "ehr", "entailment"]
        + ["--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    _check_result(tmp_path, "mirrored_throughput")
