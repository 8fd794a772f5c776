"""Attention heatmaps: written whole or not at all, and a full disk is one
line from the command, not a matplotlib traceback."""

import errno
import os

import numpy as np
import pytest

from attention_zoo.export.atomic_file import WriteError
from attention_zoo_apps import cli
from attention_zoo_apps.common import plots


def _full_disk(monkeypatch):
    """Every sync of a file fails with `ENOSPC`, as on a full disk."""

    def fsync(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)


def _plot(path):
    return plots.plot_heatmap(
        ["a", "b"], ["c"], np.array([[0.25, 0.75]]), str(path)
    )


def test_a_heatmap_is_a_png(tmp_path):
    path = _plot(tmp_path / "map.png")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(tmp_path) == ["map.png"]


def test_a_full_disk_keeps_the_old_png_and_names_it(tmp_path, monkeypatch):
    path = tmp_path / "map.png"
    path.write_bytes(b"old")
    _full_disk(monkeypatch)
    with pytest.raises(WriteError, match=f"could not write {path}: No space"):
        _plot(path)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["map.png"]  # no temporary left


def test_the_command_ends_in_one_line_on_a_write_error(monkeypatch, capsys):
    def job(argv):
        raise WriteError("/full/alignment.png", OSError(errno.ENOSPC, "full"))

    monkeypatch.setattr(cli, "_main", job)
    assert cli.main(["train", "entailment"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "attention-zoo: error: could not write /full/alignment.png: full "
        "(the file there, if any, is unchanged)\n"
    )
