"""The sampling benchmark runs end to end, briefly, every search timed."""

import pytest

from benchmarks import sampling_bench as bench


@pytest.mark.slow
def test_a_small_run_times_every_search(capsys):
    times = bench.main(
        [
            "--batch-size=4",
            "--max-length=3",
            "--vocabulary-size=50",
            "--repeats=1",
        ]
    )
    assert set(times) == {
        "greedy",
        "ours, temperature 1",
        "ours, top-k 50",
        "ours, top-p 0.9",
        "former, temperature 1",
        "former, top-p 0.9 (sorted)",
    }
    assert all(seconds > 0 for seconds in times.values())
    out = capsys.readouterr().out
    assert out.count("| ") >= len(times) + 1
