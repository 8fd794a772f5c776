"""The monotonic, local and hard attention benchmark: its baselines compute
what our layers compute (same weights, same outputs), and every comparison
runs end to end at tiny shapes."""

import keras
import numpy as np
import pytest
from keras import ops

from benchmarks import harness
from benchmarks import new_attention_layers_bench as bench

SIZES = bench.SMALL


def _inputs(scale=1.0):
    inputs = harness.random_inputs(
        {
            "query": (SIZES["batch"], SIZES["query"], SIZES["width"]),
            "value": (SIZES["batch"], SIZES["value"], SIZES["width"]),
        },
        seed=1,
    )
    return {k: scale * v for k, v in inputs.items()}


def _numpy(x):
    return ops.convert_to_numpy(x)


def test_cumprod_baseline_matches_monotonic_attention():
    # Moderate energies on a short memory: no exclusive cumprod of
    # `1 - p` falls near the 1e-10 clip, where the closed form is exact
    # up to rounding.
    inputs = _inputs(scale=0.25)
    layers = bench.shared_layers("monotonic", SIZES, inputs)
    ours, ours_alignments = layers["MonotonicAttention"](
        **inputs, return_attention_scores=True
    )
    base, base_alignments = layers["cumprod closed form"](
        **inputs, return_attention_scores=True
    )
    np.testing.assert_allclose(
        _numpy(base_alignments), _numpy(ours_alignments), atol=1e-4
    )
    np.testing.assert_allclose(_numpy(base), _numpy(ours), atol=1e-4)
    difference = bench.alignment_difference(SIZES, inputs)
    assert 0.0 <= difference < 1e-4


@pytest.mark.parametrize("name", ["local-m", "local-p"])
def test_local_baselines_match_local_attention(name):
    inputs = _inputs()
    layers = bench.shared_layers(name, SIZES, inputs)
    outputs = {key: _numpy(layer(**inputs)) for key, layer in layers.items()}
    ours = outputs.pop(f"LocalAttention({name})")
    assert outputs  # at least one baseline
    for key, output in outputs.items():
        np.testing.assert_allclose(
            output, ours, rtol=1e-5, atol=1e-5, err_msg=key
        )


def test_local_m_baseline_attends_to_the_band_only():
    # A value that is zero inside the band of query 0 (|s| <= D) and large
    # outside it: the read of query 0 must stay zero.
    inputs = _inputs()
    value = np.ones_like(inputs["value"]) * 100.0
    value[:, : SIZES["window"] + 1] = 0.0
    inputs["value"] = value
    for layer in bench.shared_layers("local-m", SIZES, inputs).values():
        np.testing.assert_allclose(_numpy(layer(**inputs))[:, 0], 0.0)


@pytest.mark.slow
def test_every_comparison_prints_a_row_per_candidate(capsys):
    argv = ["--small"]
    for name in bench.COMPARISONS:
        argv += ["--only", name]
    results = bench.main(argv)
    out = capsys.readouterr().out
    assert set(results) == set(bench.COMPARISONS)
    assert "max |difference| = " in out
    modes = 1 if keras.backend.backend() == "jax" else 2
    for name, rows in results.items():
        title, candidates, baseline, forward_only = bench.comparison(
            name, SIZES
        )
        assert f"## {title}" in out
        for candidate in candidates:
            passes = 1 if candidate in forward_only else 2
            mine = [r for r in rows if r["candidate"] == candidate]
            assert len(mine) == passes * modes, (name, candidate)
            for row in mine:
                assert row["ms"] > 0 and row["ratio"] > 0
                line = (
                    f"{row['pass']:<17}{row['policy']:<16}{candidate:<28}"
                    f"{row['mode']:<7}"
                )
                assert line in out
        for candidate, reason in forward_only.items():
            assert f"fwd+bwd skipped for {candidate}: {reason}" in out
