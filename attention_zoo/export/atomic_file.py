"""Files written beside their target, then renamed into place.

`atomic_write(path, mode)` yields a file open on a hidden temporary
sibling of `path` (`.NAME.tmp-*`, on the same file system); only when the
body ends without an error is it flushed, synced and renamed over `path`,
so `path` holds either its old content or the whole new one, never a part
(a full disk, a kill, a crash). `atomic_files(directory)` does the same
for a set of files that a writer puts into a staging folder (each file is
renamed into place; the set is not one step).

An `OSError` while writing becomes a `WriteError`, whose message names
the file and the cause in one line; the temporary is removed and the old
file (if any) is left as it was. A killed process may leave a temporary:
`remove_temporaries` clears them from a folder nothing else writes.
"""

import contextlib
import os
import shutil
import tempfile

TEMPORARY_MARK = ".tmp-"  # in the names of temporaries: `.NAME.tmp-XXXX`


class WriteError(OSError):
    """`path` could not be written (`cause`, an `OSError`); its old content,
    if any, is unchanged."""

    def __init__(self, path, cause):
        super().__init__(cause.errno, cause.strerror or str(cause), path)
        self.path = os.fspath(path)
        self.cause = cause

    def __str__(self):
        reason = self.cause.strerror or str(self.cause)
        return (
            f"could not write {self.path}: {reason} (the file there, if "
            "any, is unchanged)"
        )


def _file_mode():
    """The mode a new file gets under the process's umask (`mkstemp`
    makes private files)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _sync_directory(directory):
    """Makes a rename in `directory` durable, where the system allows."""
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8"):
    """Yields a file (`mode` "w" or "wb") that replaces `path` on success.

    Raises:
        WriteError: an `OSError` while writing (e.g. `ENOSPC`), naming
            `path`; the temporary is removed, `path` is untouched.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"`mode` must be 'w' or 'wb'. Received: {mode!r}")
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    try:
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{name}{TEMPORARY_MARK}", dir=directory
        )
    except OSError as error:
        raise WriteError(path, error) from error
    try:
        options = {} if "b" in mode else {"encoding": encoding}
        with os.fdopen(descriptor, mode, **options) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, _file_mode())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        if isinstance(error, OSError) and not isinstance(error, WriteError):
            raise WriteError(path, error) from error
        raise
    _sync_directory(directory)


def write_bytes(path, data):
    """Writes `data` to `path` (`atomic_write`)."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def write_text(path, text):
    """Writes `text` to `path` in UTF-8 (`atomic_write`)."""
    with atomic_write(path, "w") as f:
        f.write(text)


@contextlib.contextmanager
def atomic_files(directory):
    """Yields a staging folder inside `directory`; on success, every file
    written there is renamed to the same place under `directory` (folders
    made as needed), replacing what was there.

    Raises:
        WriteError: an `OSError` while staging or renaming, naming the
            file under `directory` (the staged ones are removed; the files
            already renamed stay, each one whole).
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    try:
        staging = tempfile.mkdtemp(
            prefix=f".files{TEMPORARY_MARK}", dir=directory
        )
    except OSError as error:
        raise WriteError(directory, error) from error
    target = directory
    try:
        yield staging
        for root, _, names in os.walk(staging):
            place = os.path.join(directory, os.path.relpath(root, staging))
            os.makedirs(place, exist_ok=True)
            for name in names:
                target = os.path.normpath(os.path.join(place, name))
                os.chmod(os.path.join(root, name), _file_mode())
                os.replace(os.path.join(root, name), target)
    except OSError as error:
        if not isinstance(error, WriteError):
            named = error.filename
            if isinstance(named, str) and named.startswith(staging):
                target = directory + named[len(staging) :]
            raise WriteError(target, error) from error
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _sync_directory(directory)


def remove_temporaries(directory):
    """Removes the temporaries (`.NAME.tmp-*`) that a killed writer left
    in `directory` (not in its sub-folders); only call it while no other
    process writes there. Returns the names removed."""
    removed = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(directory):
            if entry.name.startswith(".") and TEMPORARY_MARK in entry.name:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.remove(entry.path)
                removed.append(entry.name)
    return removed
