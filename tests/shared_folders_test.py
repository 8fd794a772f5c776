"""`tests.support.shared_folders`: built once, rebuilt after a failure."""

import pytest

from tests.support.shared_folders import copy_of
from tests.support.shared_folders import shared_folder


def test_a_folder_is_built_once_and_a_failed_build_leaves_none(
    tmp_path_factory, tmp_path
):
    calls = []

    def build(path):
        calls.append(path)
        (path / "weights").write_text(str(len(calls)))

    first = shared_folder(tmp_path_factory, "built_once_test", build)
    again = shared_folder(tmp_path_factory, "built_once_test", build)
    assert first == again and len(calls) == 1
    assert (first / "weights").read_text() == "1"
    copy = copy_of(first, tmp_path / "copy")
    assert sorted(p.name for p in copy.iterdir()) == ["weights"]

    def fail(path):
        (path / "half").write_text("")
        raise RuntimeError("no space")

    with pytest.raises(RuntimeError, match="no space"):
        shared_folder(tmp_path_factory, "failed_once_test", fail)
    assert not (first.parent / "failed_once_test").exists()
    built = shared_folder(tmp_path_factory, "failed_once_test", build)
    assert not (built / "half").exists() and (built / "weights").exists()
