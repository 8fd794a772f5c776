"""Exported versions are never replaced: two exports to one folder at once
write two versions, a version folder that exists (even empty) is refused,
and the temporary folders of killed exports are removed by the next one
and served by no one."""

import argparse
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from attention_zoo.export import atomic
from attention_zoo.export import atomic_directory
from attention_zoo.export import next_version
from attention_zoo.export import resolve_version
from attention_zoo_apps.commands import train_steps

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEADLINE = 120  # seconds, for a child process

# A process exporting with `export_next_version`; its bundle's `export`
# waits until both writers have picked their number (a barrier of files),
# then writes its PID into the version folder.
_WRITER = textwrap.dedent(
    """
    import argparse, os, sys, time, types

    root, base, barrier = sys.argv[1:]
    # `attention_zoo.export` without the package's `__init__` (Keras):
    # a writer starts in a fraction of a second.
    package = types.ModuleType("attention_zoo")
    package.__path__ = [os.path.join(root, "attention_zoo")]
    sys.modules["attention_zoo"] = package

    from attention_zoo_apps.commands import train_steps
    from attention_zoo.export import atomic_directory


    class Bundle:
        def export(self, path, **kwargs):
            open(os.path.join(barrier, str(os.getpid())), "w").close()
            deadline = time.monotonic() + 60
            while len(os.listdir(barrier)) < 2:
                if time.monotonic() > deadline:
                    sys.exit("the other writer never came")
                time.sleep(0.01)
            with atomic_directory(path) as temporary:
                with open(os.path.join(temporary, "writer"), "w") as f:
                    f.write(str(os.getpid()))
            return path


    args = argparse.Namespace(export=base, jit_compile="off")
    train_steps.export_next_version(Bundle(), args, {}, [])
    """
)


def test_two_exports_at_once_write_two_versions(tmp_path):
    base, barrier = tmp_path / "saved_models", tmp_path / "barrier"
    barrier.mkdir()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(ROOT), str(base), str(barrier)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [writer.communicate(timeout=DEADLINE) for writer in writers]
    for writer, (_, err) in zip(writers, outputs):
        assert writer.returncode == 0, err
    exported = sorted(
        line for out, _ in outputs for line in out.splitlines()
        if line.startswith("exported ")
    )  # fmt: skip
    # Both picked version 1; the second to finish took version 2.
    assert exported == [f"exported {base / '1'}", f"exported {base / '2'}"]
    assert sorted(os.listdir(base)) == ["1", "2"]
    pids = {(base / v / "writer").read_text() for v in ("1", "2")}
    assert pids == {str(writer.pid) for writer in writers}
    assert "was taken by another export meanwhile" in "".join(
        out for out, _ in outputs
    )


def test_an_existing_version_folder_is_refused_even_empty(tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "saved_model.pb").write_bytes(b"the first export")
    for version in ("1", "2"):
        with pytest.raises(FileExistsError, match="never replaced"):
            with atomic_directory(str(tmp_path / version)) as temporary:
                (pathlib.Path(temporary) / "saved_model.pb").write_bytes(b"")
    assert (tmp_path / "2" / "saved_model.pb").read_bytes() == (
        b"the first export"
    )
    assert os.listdir(tmp_path / "1") == []
    assert sorted(os.listdir(tmp_path)) == ["1", "2"]


@pytest.mark.parametrize("native", [True, False])
def test_a_version_taken_while_writing_is_not_replaced(
    native, tmp_path, monkeypatch
):
    if not native:  # the fallback: claim the name with mkdir, then rename
        monkeypatch.setattr(atomic, "_native_rename", lambda: None)
    target = tmp_path / "1"
    with pytest.raises(FileExistsError, match=f"{target} exists"):
        with atomic_directory(str(target)) as temporary:
            (pathlib.Path(temporary) / "saved_model.pb").write_bytes(b"mine")
            target.mkdir()  # another writer's, empty so far
    assert os.listdir(tmp_path) == ["1"]  # the temporary folder is gone
    assert os.listdir(target) == []
    with atomic_directory(str(tmp_path / "2")) as temporary:
        (pathlib.Path(temporary) / "saved_model.pb").write_bytes(b"mine")
    assert (tmp_path / "2" / "saved_model.pb").read_bytes() == b"mine"


def _dead_pid():
    """The PID of a process that has ended (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


def test_killed_exports_temporary_folders_are_removed_and_never_served(
    tmp_path,
):
    host = atomic._host()
    dead = tmp_path / f".3.tmp-{_dead_pid()}@{host}-abcd1234"
    live = tmp_path / f".4.tmp-{os.getpid()}@{host}-abcd1234"
    other_host = tmp_path / f".5.tmp-{_dead_pid()}@not-{host}-abcd1234"
    for folder in (dead, live, other_host):
        folder.mkdir()
        (folder / "saved_model.pb").write_bytes(b"half written")
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "saved_model.pb").write_bytes(b"")
    assert resolve_version(str(tmp_path)) == str(tmp_path / "2")
    # A live writer's (or another host's) number is taken; a dead one's
    # is free again.
    assert next_version(str(tmp_path)) == 6
    with atomic_directory(str(tmp_path / "6")):
        pass
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["2", "6", live.name, other_host.name]
    )
    assert resolve_version(str(tmp_path)) == str(tmp_path / "6")


def test_a_temporary_folder_is_named_after_its_writer(tmp_path):
    with atomic_directory(str(tmp_path / "1")) as temporary:
        name = os.path.basename(temporary)
        assert name.startswith(f".1.tmp-{os.getpid()}@")
        assert atomic._temporary_writer(name)[:2] == ("1", os.getpid())
        assert next_version(str(tmp_path)) == 2  # 1 is being written


def test_export_next_version_takes_the_next_number(tmp_path, capsys):
    """A writer that finds its number taken writes the next free one."""
    (tmp_path / "1").mkdir()

    class Bundle:
        attempts = []

        def export(self, path, **kwargs):
            self.attempts.append(path)
            if len(self.attempts) == 1:  # another export took it meanwhile
                os.mkdir(path)
            with atomic_directory(path):
                pass
            return path

    args = argparse.Namespace(export=str(tmp_path), jit_compile="auto")
    path = train_steps.export_next_version(Bundle(), args, {}, [])
    assert Bundle.attempts == [str(tmp_path / "2"), str(tmp_path / "3")]
    assert path == str(tmp_path / "3")
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / '2'} was taken by another export meanwhile",
        f"exported {tmp_path / '3'}",
    ]
