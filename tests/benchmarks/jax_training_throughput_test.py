"""The JAX-vs-TensorFlow training benchmark runs end to end, briefly: one
application, one round, a few steps, a child process per backend."""

import pytest

from benchmarks import jax_training_throughput as bench


@pytest.mark.slow
def test_one_round_measures_both_backends(capsys):
    rows = bench.main(
        [
            "--apps=ehr",
            "--rounds=1",
            "--steps=3",
            "--epochs=1",
            "--batch-size=16",
            "--batches=2",
        ]
    )
    row = rows["ehr"]
    assert row["batch_size"] == 16 and row["parameters"] > 0
    assert row["shapes"] >= 1
    assert row["jax"]["jit_compile"] is True  # fit always jits on JAX
    for backend in bench.BACKENDS:
        assert row[backend]["examples_per_s"] > 0
        assert row[backend]["warmup_s"] > 0
    assert len(row["ratios"]) == 1
    ratio = row["jax"]["examples_per_s"] / row["tensorflow"]["examples_per_s"]
    assert abs(row["ratio"] - ratio) < 1e-9
    table = capsys.readouterr().out
    assert "| application | batch |" in table
    assert "| ehr | 16 |" in table


def test_summarize_takes_medians_over_rounds():
    def run(backend, rate, warmup):
        return {
            "backend": backend,
            "jit_compile": backend == "jax",
            "parameters": 10,
            "batch_size": 4,
            "shapes": 2,
            "warmup_s": warmup,
            "epoch_s": [1.0],
            "examples_per_s": rate,
        }

    rounds = [
        {"jax": run("jax", j, 5.0), "tensorflow": run("tensorflow", t, 1.0)}
        for j, t in ((300.0, 100.0), (200.0, 100.0), (100.0, 200.0))
    ]
    row = bench.summarize({"ehr": rounds})["ehr"]
    assert row["jax"]["examples_per_s"] == 200.0
    assert row["tensorflow"]["examples_per_s"] == 100.0
    assert row["ratio"] == 2.0
    assert row["ratios"] == [3.0, 2.0, 0.5]
    table = bench.format_table({"ehr": row})
    assert "| ehr | 4 | 10 | 2 | False | True | 100 | 200 | 2.00x " in table
    assert "| 0.50-3.00x | 1.0 | 5.0 |" in table
