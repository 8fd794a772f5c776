"""One writer per run folder (`attention_zoo_apps.common.run_lock`): a second
process is refused with the holder's PID, host and start time; the lock
of a process that died is taken over. The holders are real processes
(the lock is a process's): plain Python ones here, `attention-zoo train`
runs in `test_a_second_training_in_a_busy_run_dir_is_refused`."""

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest

from attention_zoo_apps.common import run_lock
from tests.support.tiny_runs import TINY_FLAGS

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
TIMEOUT = 240  # seconds, for any process to reach a step

# Holds the lock of argv[1] until its stdin closes.
HOLDER = """
import sys
from attention_zoo_apps.common import run_lock
run_lock.acquire(sys.argv[1])
print("locked", flush=True)
sys.stdin.read()
"""


def _environment():
    env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2")
    paths = [str(REPOSITORY), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return env


def _start_holder(directory):
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_environment(),
    )
    assert process.stdout.readline().strip() == "locked"
    return process


def _wait_until(condition, what, process=None):
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if process is not None:
            assert process.poll() is None, f"the process ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_second_process_is_refused_with_the_holders_name(tmp_path):
    holder = _start_holder(tmp_path)
    try:
        with pytest.raises(run_lock.RunFolderBusy) as error:
            run_lock.acquire(tmp_path)
        message = str(error.value)
        assert f"{tmp_path} is being written by process {holder.pid}" in message
        assert f"on {socket.gethostname()} since 20" in message
        assert str(tmp_path / run_lock.LOCK_FILE) in message
        assert not run_lock.held(tmp_path)
    finally:
        holder.stdin.close()  # the holder exits
        holder.wait(timeout=30)
        holder.stdout.close()
    # Released on exit: the lock file is gone, and the folder free.
    assert not (tmp_path / run_lock.LOCK_FILE).exists()
    with run_lock.locked(tmp_path) as stale:
        assert stale is None
        record = json.loads((tmp_path / run_lock.LOCK_FILE).read_text())
        assert record["pid"] == os.getpid()
    assert not (tmp_path / run_lock.LOCK_FILE).exists()


def test_the_lock_of_a_killed_process_is_taken_over(tmp_path):
    holder = _start_holder(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    holder.stdin.close()
    holder.stdout.close()
    record = json.loads((tmp_path / run_lock.LOCK_FILE).read_text())
    assert record["pid"] == holder.pid  # left behind
    with run_lock.locked(tmp_path) as stale:
        assert stale["pid"] == holder.pid
        assert run_lock.held(tmp_path)


def test_a_lock_of_another_host_is_not_taken_over(tmp_path):
    # Written by a process on another machine (a network file system):
    # this host cannot tell whether it still runs.
    record = {"pid": 1, "host": "elsewhere.example", "since": "2020-01-01"}
    (tmp_path / run_lock.LOCK_FILE).write_text(json.dumps(record))
    with pytest.raises(run_lock.RunFolderBusy) as error:
        run_lock.acquire(tmp_path)
    assert "process 1 on elsewhere.example since 2020-01-01" in str(error.value)
    assert "If it no longer runs, delete" in str(error.value)


def test_the_lock_is_counted_within_a_process(tmp_path):
    with run_lock.locked(tmp_path):
        with run_lock.locked(tmp_path):  # the same process goes on
            pass
        assert (tmp_path / run_lock.LOCK_FILE).exists()
    assert not (tmp_path / run_lock.LOCK_FILE).exists()


def _train_command(run_dir, *flags):
    script = os.path.join(os.path.dirname(sys.executable), "attention-zoo")
    command = [script] if os.path.exists(script) else [
        sys.executable, "-m", "attention_zoo_apps.cli"
    ]  # fmt: skip
    return command + [
        "train", "entailment", *TINY_FLAGS["entailment"],
        "--run-dir", str(run_dir), *flags,
    ]  # fmt: skip


def _lock_pid(run_dir):
    try:
        return json.loads((run_dir / run_lock.LOCK_FILE).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.slow
def test_a_second_training_in_a_busy_run_dir_is_refused(tmp_path):
    """Two `attention-zoo train` processes with one `--run-dir`: the
    second is refused, naming the first; once the first is killed, its
    lock is taken over."""
    run_dir = tmp_path / "run"
    env = _environment()
    first = subprocess.Popen(
        _train_command(run_dir, "--epochs", "1000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    try:
        # Training, with a checkpoint written.
        _wait_until(
            lambda: (
                _lock_pid(run_dir) == first.pid
                and (run_dir / "backup").is_dir()
            ),
            "the first run's first epoch",
            first,
        )
        second = subprocess.run(
            _train_command(run_dir, "--epochs", "1000"),
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=TIMEOUT,
        )
        assert first.poll() is None  # still training meanwhile
        assert second.returncode == 2, second.stderr[-3000:]
        error = second.stderr.strip().splitlines()[-1]
        assert f"{run_dir} is being written by process {first.pid} on " in error
        assert f"{socket.gethostname()} since 20" in error
        assert "Resuming" not in second.stdout
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert _lock_pid(run_dir) == first.pid  # the dead holder's lock
    third = subprocess.run(
        _train_command(run_dir, "--epochs", "2", "--overwrite"),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"Took over the lock of {run_dir} from process {first.pid}" in (
        third.stdout
    )
    assert not (run_dir / run_lock.LOCK_FILE).exists()  # released
