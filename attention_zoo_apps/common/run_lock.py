"""One writer per run folder: `run.lock`, held while a process writes it.

The lock is an exclusive `fcntl.flock` on `RUN_DIR/run.lock`, which
records its holder (`{"pid", "host", "since"}`), so that a second writer
is refused with a message naming them (`RunFolderBusy`). The system drops
a `flock` when its process ends, however it ends: the file a killed
holder leaves behind is a stale lock, and the next writer on the same host
takes it over (`acquire` returns the dead holder's record to report). On
a file system without `flock`, the record alone decides: a holder on this
host whose PID is gone is stale, any other holder is not.

Locks are counted per process (`acquire` twice, `release` twice), so a
process that goes on with its own run folder is never refused; the lock
file is removed when the count falls to 0 or the process exits.
`hold_for_run` keeps the folder of the run a process is working on
locked until the process starts a run elsewhere or exits.
"""

import atexit
import contextlib
import datetime
import errno
import fcntl
import json
import os
import socket
import time

LOCK_FILE = "run.lock"
# How long a refused writer waits for a holder's record being written.
RECORD_WAIT = 2.0  # seconds

_held = {}  # real path of a folder -> [file descriptor, count]
_run_folder = None  # the folder `hold_for_run` keeps locked


class RunFolderBusy(RuntimeError):
    """Another process holds the run folder's lock."""

    def __init__(self, directory, holder):
        self.directory = directory
        self.holder = holder
        path = os.path.join(directory, LOCK_FILE)
        advice = "Wait until it ends, or give another --run-dir."
        if holder and holder.get("host") != socket.gethostname():
            advice += f" If it no longer runs, delete {path}."
        super().__init__(
            f"{directory} is being written by {describe(holder)} (its lock: "
            f"{path}). {advice}"
        )


def describe(holder):
    """ "process 123 on host h since 2026-01-02T03:04:05+00:00" of a
    lock record (or what is known of it)."""
    if not holder:
        return "another process (its lock record is unreadable)"
    return (
        f"process {holder.get('pid', '?')} on {holder.get('host', '?')} "
        f"since {holder.get('since', '?')}"
    )


def _record():
    since = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": since}


def _read_record(descriptor):
    """The record in the open lock file, None when empty or unreadable."""
    try:
        text = os.pread(descriptor, 4096, 0).decode("utf-8")
        record = json.loads(text)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(descriptor):
    """Records this process as the holder (best effort: on a full disk
    the lock holds without its record)."""
    data = json.dumps(_record()).encode("utf-8")
    with contextlib.suppress(OSError):
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, data, 0)
        os.fsync(descriptor)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _holder_record(descriptor):
    """A refused writer's view of the holder: its record, waiting a little
    for one being written (a new holder writes it after locking)."""
    deadline = time.monotonic() + RECORD_WAIT
    while (record := _read_record(descriptor)) is None:
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    return record


def acquire(directory):
    """Locks `directory` (made if missing) for this process.

    Returns:
        The record of a stale lock taken over (a holder that died without
        releasing it), else None.

    Raises:
        RunFolderBusy: another process holds the lock.
    """
    key = os.path.realpath(directory)
    if key in _held:
        _held[key][1] += 1
        return None
    created = not os.path.isdir(directory)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, LOCK_FILE)
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            stale = _lock(descriptor, directory)
            # A holder removes the file when it releases it: the file we
            # locked must still be the one at `path`.
            if os.fstat(descriptor).st_ino != os.stat(path).st_ino:
                raise FileNotFoundError(path)
        except FileNotFoundError:
            os.close(descriptor)
            continue
        except BaseException:
            os.close(descriptor)
            raise
        _write_record(descriptor)
        _held[key] = [descriptor, 1, created]
        return stale


def _lock(descriptor, directory):
    """Takes the lock on the open lock file; returns a stale record or
    None; raises `RunFolderBusy`."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunFolderBusy(directory, _holder_record(descriptor)) from None
    except OSError as error:
        if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            raise
        # No `flock` here: the record decides.
        record = _read_record(descriptor)
        if record and (
            record.get("host") != socket.gethostname()
            or _alive(record.get("pid", -1))
        ):
            raise RunFolderBusy(directory, record) from None
        return record
    record = _read_record(descriptor)
    if record and record.get("host") != socket.gethostname():
        # Locks may not reach across hosts on every network file system:
        # a holder on another host may be running.
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        raise RunFolderBusy(directory, record)
    return record


def release(directory):
    """Undoes one `acquire` of `directory`; the last removes the lock,
    and the folder too when `acquire` made it and nothing was written
    there since (a command refused before it wrote anything)."""
    key = os.path.realpath(directory)
    if key not in _held:
        return
    _held[key][1] -= 1
    if _held[key][1] > 0:
        return
    descriptor, _, created = _held.pop(key)
    with contextlib.suppress(OSError):
        path = os.path.join(key, LOCK_FILE)
        if os.stat(path).st_ino == os.fstat(descriptor).st_ino:
            os.remove(path)
    os.close(descriptor)  # drops the flock
    if created:
        with contextlib.suppress(OSError):  # not empty: the run's files
            os.rmdir(key)


@contextlib.contextmanager
def locked(directory):
    """`acquire` ... `release`; yields the stale record taken over."""
    stale = acquire(directory)
    try:
        yield stale
    finally:
        release(directory)


def hold_for_run(directory):
    """Locks `directory` for the run this process works on until it
    starts a run in another folder or exits (`acquire`'s return value and
    errors)."""
    global _run_folder
    stale = acquire(directory)
    if _run_folder is not None:
        release(_run_folder)
    _run_folder = directory
    return stale


def release_run():
    """Releases the lock `hold_for_run` holds, if any: when a command
    run in this process ends (`attention_zoo_apps.cli.main`)."""
    global _run_folder
    if _run_folder is not None:
        release(_run_folder)
        _run_folder = None


def held(directory):
    """Whether this process holds `directory`'s lock."""
    return os.path.realpath(directory) in _held


@atexit.register
def _release_all():
    for key in list(_held):
        _held[key][1] = 1
        release(key)
