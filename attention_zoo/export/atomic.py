"""Atomic export folders and TF-Serving version numbers.

TF Serving takes a version folder, once it appears, to be immutable, so a
version is never replaced: `atomic_directory` writes beside the final
name and renames into place only where nothing is there yet (Linux's
`renameat2(RENAME_NOREPLACE)`, macOS's `renamex_np(RENAME_EXCL)`, else a
`mkdir` that claims the name followed by a `rename` onto that empty
folder). The temporary folder's name, `.NAME.tmp-PID@HOST-XXXXXXXX`, says
which process writes it: the next export to the same folder removes
those of processes that are gone (killed exports), and `next_version`
counts those of live ones as taken.
"""

import contextlib
import ctypes
import errno
import functools
import os
import re
import shutil
import socket
import sys
import tempfile

# `.NAME.tmp-PID@HOST-` + mkdtemp's random suffix.
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)@(?P<host>.+)-\w+$")
# Linux's renameat2 arguments, macOS's renamex_np flag.
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCL = 0x4


def next_version(base_dir):
    """The next free integer version under `base_dir` (1 when empty).

    A number is taken by a version folder, or by the temporary folder of
    an export still being written (by a live process, or one of another
    host) under `atomic_directory`.
    """
    taken = [0]
    for name in _listdir(base_dir):
        if name.isdigit():
            taken.append(int(name))
        else:
            writer = _temporary_writer(name)
            if writer and writer[0].isdigit() and not _is_dead(*writer[1:]):
                taken.append(int(writer[0]))
    return max(taken) + 1


@contextlib.contextmanager
def atomic_directory(path):
    """Yields a temporary folder that becomes `path` only on success.

    The temporary folder is a hidden sibling of `path` (same file system,
    so the final rename is atomic), named after this process
    (`.name.tmp-PID@HOST-*`). If the body raises, or the process is
    interrupted, nothing appears at `path` and the temporary folder is
    removed; one left by a killed process is removed by the next
    `atomic_directory` in the same folder. An existing `path` is never
    replaced, not even an empty folder: `FileExistsError`, at once or,
    when another writer took `path` meanwhile, at the end (the temporary
    folder is then removed). The folder gets the permissions of any
    folder made under the process's umask.

    Raises:
        FileExistsError: `path` exists.
    """
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    _refuse_existing(path)
    os.makedirs(parent, exist_ok=True)
    remove_stale_temporaries(parent)
    temporary = tempfile.mkdtemp(
        prefix=f".{name}.tmp-{os.getpid()}@{_host()}-", dir=parent
    )
    try:
        yield temporary
        # `mkdtemp` makes the folder private (0700): give it the mode any
        # new folder gets, so that a server running as another user can
        # read it.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o777 & ~umask)
        rename_no_replace(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def rename_no_replace(source, target):
    """Renames `source` to `target` unless `target` exists, atomically.

    Raises:
        FileExistsError: `target` exists (a folder, even empty, or a
            file); `source` is left as it was.
    """
    rename = _native_rename()
    if rename is not None:
        if rename(os.fsencode(source), os.fsencode(target)) == 0:
            return
        error = ctypes.get_errno()
        # A file system without the flag says EINVAL (or ENOTSUP):
        # claim the name with a folder instead.
        if error not in (errno.EINVAL, errno.ENOTSUP, errno.ENOSYS):
            _raise(error, source, target)
    try:
        os.mkdir(target)  # fails if anything is there
    except FileExistsError:
        _raise(errno.EEXIST, source, target)
    try:
        os.rename(source, target)  # replaces the empty folder just made
    except BaseException:
        os.rmdir(target)
        raise


def remove_stale_temporaries(parent):
    """Removes the temporary folders of `atomic_directory` in `parent`
    whose writer, a process of this host, is gone; returns their names."""
    removed = []
    for name in _listdir(parent):
        writer = _temporary_writer(name)
        if writer and _is_dead(*writer[1:]):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
            removed.append(name)
    return removed


def _refuse_existing(path):
    if os.path.lexists(path):
        _raise(errno.EEXIST, None, path)


def _raise(error, source, target):
    if error == errno.EEXIST:
        raise FileExistsError(
            f"{target} exists: an exported version is never replaced (TF "
            "Serving assumes versions do not change); export to a new "
            "version number"
        )
    raise OSError(error, os.strerror(error), source, None, target)


def _listdir(directory):
    try:
        return os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _temporary_writer(name):
    """`(version name, pid, host)` of a temporary folder's name, or None."""
    match = _TEMPORARY.match(name)
    if match is None:
        return None
    return match["name"], int(match["pid"]), match["host"]


def _is_dead(pid, host):
    """Whether process `pid` of `host` is known to be gone (a process of
    another host is taken to be alive)."""
    if host != _host() or os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


@functools.cache
def _host():
    # No '@' and no '/' in a file name; '-' ends the host in the pattern,
    # which is greedy, so hosts with '-' parse too.
    return socket.gethostname().replace("/", "_").replace("@", "_") or "host"


@functools.cache
def _native_rename():
    """`rename(source, target) -> 0 or -1 (errno set)` that never
    replaces, from the C library; None where there is none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the C library's symbols
    except (OSError, TypeError):  # Windows: no such handle
        return None
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        renameat2 = libc.renameat2
        renameat2.argtypes = (
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        )
        renameat2.restype = ctypes.c_int
        return lambda source, target: renameat2(
            _AT_FDCWD, source, _AT_FDCWD, target, _RENAME_NOREPLACE
        )
    if sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        renamex_np = libc.renamex_np
        renamex_np.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint)
        renamex_np.restype = ctypes.c_int
        return lambda source, target: renamex_np(source, target, _RENAME_EXCL)
    return None
