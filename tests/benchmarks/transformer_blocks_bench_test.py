"""keras-hub is the `benchmarks` extra's: without it, the benchmark's
flags still parse (`--help` works) and measuring stops with one line
naming the extra."""

import sys

import pytest

from benchmarks import transformer_blocks_bench


def test_without_keras_hub_the_error_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "keras_hub", None)  # import fails
    with pytest.raises(SystemExit) as exited:
        transformer_blocks_bench.main(["--help"])
    assert exited.value.code == 0
    assert "--repeats" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        transformer_blocks_bench.main(["--repeats", "1"])
    assert 'pip install ".[benchmarks]"' in str(exited.value.code)
