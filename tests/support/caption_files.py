"""Files the captioning loader tests write, and their error patterns."""

import gzip
import re


def write(path, text, compress=False):
    """Writes `text` as UTF-8 (gzipped with `compress`), folders created."""
    raw = text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def touch(directory, *names):
    """Files named `names` under `directory` that are not images."""
    for name in names:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(b"not decoded by the loaders")


def error_at(path, line):
    """A regex for the start of an error about `path:line`."""
    return "^" + re.escape(f"{path}:{line}: ")
