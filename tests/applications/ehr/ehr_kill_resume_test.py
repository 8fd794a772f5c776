"""`attention-zoo train ehr` killed with SIGKILL in the middle of an epoch
and restarted with the same command resumes from its last checkpoint.

Unlike `ehr_resume_test.py` (an exception raised in-process) nothing gets
to clean up: the process dies between two training steps, and the restart
must find `backup/` as the kill left it.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
EPOCHS = 2
TIMEOUT = 300  # seconds, for each of the two runs


def _command(run_dir):
    script = os.path.join(os.path.dirname(sys.executable), "attention-zoo")
    if os.path.exists(script):
        command = [script]
    else:
        command = [sys.executable, "-m", "attention_zoo_apps.cli"]
    # Epochs of about 80 steps: a few seconds each, so the kill lands
    # inside the second one.
    return command + [
        "train",
        "ehr",
        "--synthetic-patients",
        "800",
        "--epochs",
        str(EPOCHS),
        "--encoder",
        "gru",
        "--embedding-dim",
        "8",
        "--units",
        "8",
        "--batch-size",
        "8",
        "--run-dir",
        str(run_dir),
    ]


def _environment():
    env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2")
    paths = [str(REPOSITORY), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return env


class _Output:
    """Collects a process's output from a thread (the progress bar writes
    `\\r` updates without newlines, so lines would block)."""

    def __init__(self, stream):
        self.text = ""
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._read, args=(stream,), daemon=True
        )
        self._thread.start()

    def _read(self, stream):
        while chunk := stream.read1(4096):
            with self._lock:
                self.text += chunk.decode("utf-8", "replace")

    def snapshot(self):
        with self._lock:
            return self.text

    def join(self):
        self._thread.join(timeout=10)
        return self.snapshot()


def _backup_epoch(run_dir):
    """The epoch `BackupAndRestore` resumes at (None before the first)."""
    path = run_dir / "backup" / "training_metadata.json"
    try:
        return json.loads(path.read_text())["epoch"]
    except (OSError, ValueError):
        return None  # not written yet (or being written)


def _steps_into(text, epoch):
    """The last step the progress bar shows in epoch `epoch` (1-based)."""
    marker = f"Epoch {epoch}/{EPOCHS}"
    if marker not in text:
        return 0
    steps = re.findall(r"(\d+)/\d+", text.split(marker, 1)[1])
    return int(steps[-1]) if steps else 0


@pytest.mark.slow
def test_sigkill_mid_epoch_then_restart_resumes(tmp_path):
    run_dir = tmp_path / "run"
    command, env = _command(run_dir), _environment()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,
    )
    output = _Output(process.stdout)
    try:
        deadline = time.monotonic() + TIMEOUT
        # Epoch 1 is checkpointed and epoch 2 a few steps in.
        while not (
            _backup_epoch(run_dir) == 1
            and _steps_into(output.snapshot(), 2) >= 5
        ):
            assert process.poll() is None, output.snapshot()[-3000:]
            assert time.monotonic() < deadline, output.snapshot()[-3000:]
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        first = output.join()
        process.stdout.close()
    assert _backup_epoch(run_dir) == 1, first[-3000:]  # killed mid-epoch 2
    assert (run_dir / "model.weights.h5").exists()

    restarted = subprocess.run(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    text = restarted.stdout.decode("utf-8", "replace")
    assert restarted.returncode == 0, text[-3000:]
    assert f"Resuming the interrupted run in {run_dir}" in text
    assert f"Epoch 1/{EPOCHS}" not in text  # the finished epoch is not redone
    assert f"Epoch 2/{EPOCHS}" in text
    assert "test: AUROC" in text  # evaluated after training
    assert not (run_dir / "backup").exists()  # the run finished
    for name in ("model.weights.h5", "config.json", "codes.txt"):
        assert (run_dir / name).exists(), name
