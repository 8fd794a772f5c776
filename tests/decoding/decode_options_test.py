"""`decode`'s options: coverage penalty, n-best and sampling.

The toy adapter of `toy_adapter` attends uniformly over the real source
tokens and gives PAD exactly zero weight, so the coverage penalty must
leave the padding out (or become `-inf`).
"""

import numpy as np
import pytest

from tests.support import decoding_reference
from tests.support.toy_adapter import STEPS
from tests.support.toy_adapter import VOCABULARY
from tests.support.toy_adapter import decode_to_numpy
from tests.support.toy_adapter import example_tables
from tests.support.toy_adapter import make_adapter
from tests.support.toy_adapter import random_sources


def _uniform_attention(sources):
    """The toy adapter's attention as tables `(B, L, V, Ts)`."""
    real = (sources != 0) / (sources != 0).sum(1, keepdims=True)  # (B, Ts)
    shape = (len(sources), STEPS, VOCABULARY, sources.shape[1])
    return np.broadcast_to(real[:, None, None], shape)


@pytest.mark.parametrize("jit_compile", [True, False], ids=["xla", "eager"])
@pytest.mark.parametrize("beam_size", [2, 3])
def test_coverage_penalty_matches_numpy_beam_search(beam_size, jit_compile):
    adapter = make_adapter(seed=2)
    sources = random_sources(3, 5, seed=2)  # padded to (4, 8): PAD is left out
    out = decode_to_numpy(
        adapter,
        sources,
        beam_size=beam_size,
        length_penalty=0.6,
        coverage_penalty=1.5,
        jit_compile=jit_compile,
    )
    tables = example_tables(adapter, sources)
    attention = _uniform_attention(sources)
    expected = decoding_reference.beam_search(
        tables, beam_size, 0.6, 1.5, attention
    )
    tokens, scores, lengths, weights = zip(*[beams[0] for beams in expected])
    np.testing.assert_array_equal(out["tokens"], np.stack(tokens))
    np.testing.assert_array_equal(out["lengths"], lengths)
    np.testing.assert_allclose(out["scores"], scores, atol=1e-4)
    np.testing.assert_allclose(out["attention"], np.stack(weights), atol=1e-6)
    assert np.isfinite(out["beam_normalized_scores"]).all()
    # Short hypotheses cover little of the source: the penalty matters.
    plain = decode_to_numpy(
        adapter, sources, beam_size=beam_size, length_penalty=0.6
    )
    assert not np.array_equal(plain["tokens"], out["tokens"])


def test_zero_coverage_penalty_equals_no_penalty():
    adapter = make_adapter(seed=5)
    sources = random_sources(3, 5, seed=5)
    plain = decode_to_numpy(adapter, sources, beam_size=3, length_penalty=0.6)
    zero = decode_to_numpy(
        adapter, sources, beam_size=3, length_penalty=0.6, coverage_penalty=0
    )
    for key in plain:
        np.testing.assert_array_equal(zero[key], plain[key], err_msg=key)
    assert len(adapter.encoded) == 1  # the same compiled search


def test_num_results_gives_the_best_beams_best_first():
    adapter = make_adapter(seed=6)
    sources = random_sources(3, 5, seed=6)
    best = decode_to_numpy(adapter, sources, beam_size=3)
    for count in (2, 3):
        out = decode_to_numpy(adapter, sources, beam_size=3, num_results=count)
        assert out["tokens"].shape == (3, count, STEPS)
        assert out["attention"].shape == (3, count, STEPS, 5)
        for key in ("tokens", "lengths", "scores", "normalized_scores"):
            np.testing.assert_array_equal(
                out[key], best[f"beam_{key}"][:, :count], err_msg=key
            )
            np.testing.assert_array_equal(out[key][:, 0], best[key])
        np.testing.assert_array_equal(out["attention"][:, 0], best["attention"])
        ranked = out["normalized_scores"]
        assert (np.diff(ranked, axis=1) <= 0).all()  # best first
    # One compiled search served all three: `num_results` is not in it.
    assert len(adapter.encoded) == 1


def test_num_results_beyond_the_beam_is_an_error():
    adapter, sources = make_adapter(), random_sources(2, 3)
    message = r"num_results.*beam_size.*num_results=4, beam_size=3"
    with pytest.raises(ValueError, match=message):
        decode_to_numpy(adapter, sources, beam_size=3, num_results=4)
    with pytest.raises(ValueError, match="num_results=2, beam_size=1"):
        decode_to_numpy(adapter, sources, num_results=2)
    with pytest.raises(ValueError, match="num_results"):
        decode_to_numpy(adapter, sources, beam_size=3, num_results=0)


def test_sampling_repeats_per_seed_and_never_recompiles():
    adapter = make_adapter(seed=7)
    sources = random_sources(8, 6, seed=7)

    def sample(seed):
        return decode_to_numpy(
            adapter, sources, sampling="temperature", temperature=3.0, seed=seed
        )

    first = sample(1)
    assert first["tokens"].shape == (8, STEPS)
    assert first["attention"].shape == (8, STEPS, 6)
    for key in first:
        np.testing.assert_array_equal(sample(1)[key], first[key], err_msg=key)
    assert not np.array_equal(sample(2)["tokens"], first["tokens"])
    sample(None)  # a new seed of its own, the same compiled search
    assert len(adapter.encoded) == 1


@pytest.mark.parametrize(
    "options",
    [
        {"sampling": "greedy"},
        {"sampling": "top_k", "top_k": 2, "temperature": 0.0},
        {"sampling": "top_p", "top_p": 0.9, "temperature": 1e-6},
    ],
)
def test_greedy_and_cold_sampling_equal_greedy_search(options):
    adapter = make_adapter(seed=8)
    sources = random_sources(4, 5, seed=8)
    greedy = decode_to_numpy(adapter, sources)
    out = decode_to_numpy(adapter, sources, seed=3, **options)
    for key in ("tokens", "lengths", "scores", "attention"):
        np.testing.assert_array_equal(out[key], greedy[key], err_msg=key)


def test_top_k_through_decode_keeps_to_the_k_best():
    adapter = make_adapter(seed=9)
    sources = random_sources(8, 6, seed=9)
    logp = decoding_reference.log_softmax(example_tables(adapter, sources))
    for seed in range(3):
        out = decode_to_numpy(
            adapter,
            sources,
            sampling="top_k",
            top_k=2,
            temperature=5.0,
            seed=seed,
        )
        for b, row in enumerate(logp):
            prev = decoding_reference.START
            for t in range(out["lengths"][b]):
                token = out["tokens"][b, t]
                assert (row[t, prev] > row[t, prev, token]).sum() < 2
                prev = token


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sampling": "top_k", "top_k": 2, "beam_size": 3}, "beam_size=3"),
        ({"temperature": 0.5}, "temperature"),
        ({"top_p": 0.5}, "top_p"),
        ({"sampling": "beam"}, "sampling"),
        ({"coverage_penalty": -1.0}, "coverage_penalty"),
    ],
)
def test_invalid_options_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        decode_to_numpy(make_adapter(), random_sources(2, 3), **kwargs)
