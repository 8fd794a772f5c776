"""`benchmarks/gpu`: the GPU check runs whole on the CPU at toy sizes
(`--tiny`, JAX), as CI runs it so that it cannot rot, and writes a result
file naming the device; it imports without TensorFlow, and its wheel list
pins the Keras this project tests with."""

import importlib.metadata
import json
import os
import subprocess
import sys

import pytest

from tests.support.distributed_runs import ROOT

REQUIREMENTS = os.path.join(ROOT, "benchmarks", "gpu", "requirements.txt")


@pytest.mark.slow
def test_the_gpu_check_runs_whole_at_toy_sizes(tmp_path):
    environment = dict(os.environ, KERAS_BACKEND="jax")
    command = [sys.executable, "-m", "benchmarks.gpu.gpu_check", "--tiny"]
    command += ["--repeats", "1", "--out", str(tmp_path)]
    done = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with open(tmp_path / "gpu_check.json", encoding="utf-8") as file:
        result = json.load(file)["result"]
    assert result["device"] == "cpu" and result["sizes"] == "tiny"
    candidates = {row["candidate"] for row in result["layers"]}
    assert candidates == {"MultiHead", "keras.MultiHeadAttention"}
    searches = {row["search"] for row in result["decoding"]}
    assert searches == {
        "greedy, compiled whole",
        "greedy, Python loop",
        "beam 4, compiled whole",
        "beam 4, Python loop",
    }
    assert [row["policy"] for row in result["wavenet"]] == [
        "float32",
        "mixed_bfloat16",
    ]
    applications = {row["application"] for row in result["training"]}
    assert {"entailment", "ehr", "captioning"} < applications
    for row in result["training"]:
        assert row["examples per s"] > 0 and row["FLOP per step"] > 0, row


def test_the_gpu_check_imports_no_tensorflow():
    # The GPU machine has JAX but no TensorFlow: the script, the layers,
    # decoding and application models it runs must import without it.
    code = (
        "import sys; sys.modules['tensorflow'] = None; "
        "import benchmarks.gpu.gpu_check"
    )
    environment = dict(os.environ, KERAS_BACKEND="jax")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_wheel_list_pins_the_keras_the_project_tests_with():
    pins = {}
    with open(REQUIREMENTS, encoding="utf-8") as file:
        for line in file:
            if line.strip() and not line.startswith("#"):
                name, version = line.strip().split("==")
                pins[name] = version
    assert pins["keras"] == importlib.metadata.version("keras")
    assert "tensorflow" not in pins and "jax" not in pins
