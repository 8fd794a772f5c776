"""Atomic export folders and TF-Serving version numbers."""

import contextlib
import os
import shutil
import tempfile


def next_version(base_dir):
    """The next free integer version under `base_dir` (1 when empty)."""
    versions = [
        int(name)
        for name in (os.listdir(base_dir) if os.path.isdir(base_dir) else ())
        if name.isdigit()
    ]
    return max(versions, default=0) + 1


@contextlib.contextmanager
def atomic_directory(path):
    """Yields a temporary folder that replaces `path` only on success.

    The temporary folder is a hidden sibling of `path` (same file system,
    so the final `os.rename` is atomic). If the body raises, or the process
    is interrupted, `path` is untouched and the temporary folder is removed
    (a killed process may leave a hidden `.name.tmp-*` sibling, never a
    half-written `path`). An existing `path` is replaced. The folder gets
    the permissions of any folder made under the process's umask.
    """
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=parent)
    try:
        yield temporary
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    # `mkdtemp` makes the folder private (0700): give it the mode any new
    # folder gets, so that a server running as another user can read it.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o777 & ~umask)
    if os.path.exists(path):
        old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
        os.rename(path, os.path.join(old, name))
        os.rename(temporary, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(temporary, path)
