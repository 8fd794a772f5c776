"""Folders built once per test session and read by every test process.

`shared_folder(tmp_path_factory, name, build)` gives the path of the
folder `name`, built by `build(path)` the first time any process of the
session asks for it: pytest-xdist's workers share the parent of their
base temporary folders, so a model trained (or exported) there by one
worker is loaded by the others instead of trained again. A file lock
makes the others wait while it is built; a build that fails leaves no
folder, and the next process to ask builds it again (and fails alike).

Tests never change a shared folder: one that writes into it takes a copy
(`copy_of`).
"""

import contextlib
import fcntl
import os
import shutil

import pytest

_DONE = ".built"


def session_root(tmp_path_factory):
    """The folder every process of this test session shares."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the workers' common parent
    root = base / "shared"
    root.mkdir(exist_ok=True)
    return root


@contextlib.contextmanager
def _locked(path):
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def shared_folder(tmp_path_factory, name, build):
    """The folder `name` of this session, built by `build(path)` once."""
    root = session_root(tmp_path_factory)
    path = root / name
    with _locked(root / f".{name}.lock"):
        if not (path / _DONE).exists():
            if path.exists():
                shutil.rmtree(path)  # a build that failed half way
            path.mkdir(parents=True)
            try:
                build(path)
            except BaseException:
                shutil.rmtree(path, ignore_errors=True)
                raise
            (path / _DONE).touch()
    return path


def copy_of(folder, destination):
    """A copy of a shared folder (or one of its subfolders) to change."""
    shutil.copytree(folder, destination, ignore=shutil.ignore_patterns(_DONE))
    return destination


_SESSION = {}


@pytest.fixture(scope="session", autouse=True)
def shared(tmp_path_factory):
    """`shared(name, build)`: `shared_folder` for this session (also
    `session_shared()`, for helpers that are not handed the fixture)."""

    def get(name, build):
        return shared_folder(tmp_path_factory, name, build)

    _SESSION["shared"] = get
    yield get
    _SESSION.clear()


def session_shared():
    """The session's `shared`, or None outside a test session."""
    return _SESSION.get("shared")
