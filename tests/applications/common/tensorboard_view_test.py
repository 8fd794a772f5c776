"""The documented `tensorboard --logdir RUN/logs` shows a run's logs:
TensorBoard itself, started on the logs of the session's finished tiny
run of `attention-zoo train entailment`, lists its runs with their
scalars, images and text."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from attention_zoo_apps.common import watching
from tests.support import tiny_runs

APP = "entailment"
ADDRESS = re.compile(r"TensorBoard [\d.]+ at (http://127\.0\.0\.1:\d+)/")


def _get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def _address(process, seconds=120):
    """The URL TensorBoard prints once it serves."""
    deadline = time.monotonic() + seconds
    for line in process.stdout:
        found = ADDRESS.search(line)
        if found:
            return found[1]
        if time.monotonic() > deadline:
            break
    pytest.fail(f"TensorBoard did not start (exit {process.poll()})")


def _tags(address, plugin, runs, seconds=60):
    """`{run: tags}` of `plugin`, once TensorBoard has read tags of each
    of `runs` (it loads the logs in the background)."""
    deadline = time.monotonic() + seconds
    while True:
        tags = _get(f"{address}/data/plugin/{plugin}/tags")
        read = all(tags.get(run) for run in runs)
        if read or time.monotonic() > deadline:
            return tags
        time.sleep(0.5)


def test_tensorboard_shows_a_finished_run(shared):
    logs = tiny_runs.finished_run(shared, APP) / "run" / watching.LOGS_DIR
    tensorboard = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    process = subprocess.Popen(
        [tensorboard, "--logdir", str(logs), "--host", "127.0.0.1"]
        + ["--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    started = time.monotonic()
    try:
        address = _address(process)
        print(f"TensorBoard served in {time.monotonic() - started:.1f} s")
        scalars = _tags(address, "scalars", ["train", "validation"])
        assert {"train", "validation"} <= set(scalars), scalars
        assert any("loss" in tag for tag in scalars["train"])
        assert any("learning_rate" in tag for tag in scalars["train"])
        examples = watching.EXAMPLES_RUN
        assert _tags(address, "images", [examples]).get(examples)
        assert _tags(address, "text", [examples]).get(examples)
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()
