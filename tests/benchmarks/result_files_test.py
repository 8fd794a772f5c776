"""`benchmarks.harness.run --out DIR` (the benchmarks' and the
experiments' result files) replaces each file whole: a full disk while
the new result is written leaves the previous file as it was and names the
file in its error."""

import argparse
import errno
import json

import pytest

from attention_zoo.export.atomic_file import WriteError
from benchmarks import harness


def _run(out, value):
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    return harness.run(
        "benchmarks/tiny.py", parser, lambda args: {"x": value}, ["--out", out]
    )


def test_a_full_disk_keeps_the_previous_result(tmp_path, monkeypatch):
    out = str(tmp_path)
    assert _run(out, 1) == {"x": 1}
    before = (tmp_path / "tiny.json").read_text()
    assert json.loads(before)["result"] == {"x": 1}

    def dump_then_fill_the_disk(document, file, **kwargs):
        file.write('{"command": ')  # a partial document, then ENOSPC
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(harness.json, "dump", dump_then_fill_the_disk)
    with pytest.raises(WriteError, match="tiny.json"):
        _run(out, 2)
    assert (tmp_path / "tiny.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "tiny.json",
        "tiny.txt",
    ]
