"""`sample_search`: temperature, top-k and top-p sampling in the loop.

The fake model of `decoding_reference` gives each step's logits from a
table, so a sampled sequence's step distributions are recomputed in NumPy
and every drawn token is checked against them.
"""

import numpy as np
import pytest

from attention_zoo.decoding import greedy_search
from attention_zoo.decoding import sample_search
from attention_zoo.decoding import top_k_logits
from attention_zoo.decoding import top_p_logits
from attention_zoo.decoding import top_p_mask
from tests.support import decoding_reference
from tests.support.decoding_reference import END
from tests.support.decoding_reference import START
from tests.support.decoding_reference import run_sample
from tests.support.decoding_reference import wide_model
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy


def _steps(model, out):
    """`(b, t, log_probs (V,), token)` for every generated token."""
    for b, logp in enumerate(decoding_reference.log_softmax(model.tables)):
        prev = START
        for t in range(out["lengths"][b]):
            token = out["tokens"][b, t]
            yield b, t, logp[t, prev], token
            prev = token


def _nucleus(log_probs, top_p):
    """NumPy: the smallest set of likeliest tokens of mass >= `top_p`."""
    probabilities = np.exp(log_probs - log_probs.max())
    probabilities /= probabilities.sum()
    order = np.argsort(-probabilities, kind="stable")
    mass = np.cumsum(probabilities[order])
    return set(order[: int(np.searchsorted(mass, top_p)) + 1].tolist())


def test_top_k_logits_are_the_k_best():
    logits = np.random.default_rng(0).normal(size=(4, 10)).astype("float32")
    values, ids = to_numpy(top_k_logits(logits, 3))
    order = np.argsort(-logits, axis=1)[:, :3]
    np.testing.assert_array_equal(ids, order)
    np.testing.assert_array_equal(values, np.take_along_axis(logits, order, 1))
    assert to_numpy(top_k_logits(logits, 50))[0].shape == (4, 10)


@pytest.mark.parametrize("top_p", [1e-3, 0.3, 0.75, 0.9, 1.0])
def test_top_p_keeps_the_smallest_set_reaching_p(top_p):
    rng = np.random.default_rng(1)
    logits = (rng.normal(size=(6, 12)) * 1.5).astype("float32")
    kept, ids = to_numpy(top_p_logits(logits, top_p))
    for row in range(6):
        expected = _nucleus(logits[row].astype("float64"), top_p)
        chosen = set(ids[row][kept[row] > -1e8].tolist())
        assert chosen == expected, (row, top_p)
        # Best first, the kept logits are the row's own.
        np.testing.assert_array_equal(
            kept[row, : len(chosen)], np.sort(logits[row])[::-1][: len(chosen)]
        )
        probabilities = np.exp(logits[row]) / np.exp(logits[row]).sum()
        mass = probabilities[sorted(chosen)].sum()
        smallest = mass - probabilities[ids[row, len(chosen) - 1]]
        assert mass >= top_p - 1e-6 and smallest < top_p


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "eager"])
@pytest.mark.parametrize("top_p", [1e-3, 0.3, 0.75, 0.9, 0.999, 1.0])
def test_top_p_mask_keeps_the_nucleus_without_sorting(top_p, compiled):
    rng = np.random.default_rng(2)
    logits = (rng.normal(size=(16, 300)) * 2.5).astype("float32")
    mask = lambda x: top_p_mask(x, top_p)  # noqa: E731
    kept = to_numpy((jit(mask) if compiled else mask)(logits))
    if top_p == 1.0:  # everything (the float64 sums reach 1 before it)
        assert kept.all()
        return
    for row in range(16):
        expected = _nucleus(logits[row].astype("float64"), top_p)
        assert set(np.flatnonzero(kept[row]).tolist()) == expected, row


def test_top_p_mask_keeps_ties_together():
    # Probabilities 0.4, 0.2, 0.2, 0.2: the nucleus of 0.5 is the best and
    # one of the tied three; the mask keeps all three.
    logits = np.log(np.array([[0.4, 0.2, 0.2, 0.2]], "float32"))
    np.testing.assert_array_equal(
        to_numpy(top_p_mask(logits, 0.5)), [[True, True, True, True]]
    )
    np.testing.assert_array_equal(
        to_numpy(top_p_mask(logits, 0.4)), [[True, False, False, False]]
    )


def test_top_p_by_hand():
    logits = np.log(np.array([[0.1, 0.5, 0.15, 0.25]], "float32"))
    for top_p, expected in [(0.5, {1}), (0.6, {1, 3}), (0.8, {1, 3, 2})]:
        kept, ids = to_numpy(top_p_logits(logits, top_p))
        assert set(ids[0][kept[0] > -1e8].tolist()) == expected


@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_top_k_never_emits_a_token_outside_the_k_best(top_k):
    model = wide_model(seed=2)
    ranks = []
    for seed in range(3):
        out = run_sample(model, seed=seed, sampling="top_k", top_k=top_k)
        for _, _, log_probs, token in _steps(model, out):
            ranks.append(int((log_probs > log_probs[token]).sum()))
    assert max(ranks) < top_k
    assert len(set(ranks)) == top_k  # each of the k best was drawn


@pytest.mark.parametrize("temperature", [1.0, 0.8])
def test_top_p_emits_tokens_of_the_nucleus(temperature):
    model = wide_model(seed=3)
    outside = drawn = 0
    for seed in range(3):
        out = run_sample(
            model,
            seed=seed,
            sampling="top_p",
            top_p=0.6,
            temperature=temperature,
        )
        for _, _, log_probs, token in _steps(model, out):
            nucleus = _nucleus(log_probs / temperature, 0.6)
            outside += token not in nucleus
            drawn += len(nucleus) > 1 and token != np.argmax(log_probs)
    assert outside == 0 and drawn > 0


@pytest.mark.parametrize("sampling", ["temperature", "top_k", "top_p"])
@pytest.mark.parametrize("temperature", [0.0, 1e-6])
def test_temperature_zero_is_greedy(sampling, temperature):
    model = wide_model(seed=4)
    options = {"top_k": 3} if sampling == "top_k" else {}
    if sampling == "top_p":
        options = {"top_p": 0.9}
    out = run_sample(
        model, sampling=sampling, temperature=temperature, **options
    )
    greedy = to_numpy(
        jit(
            lambda state: greedy_search(
                model.step_fn(), state, START, END, model.max_length
            )
        )(model.initial_state())
    )
    for key in ("tokens", "lengths", "scores", "attention"):
        np.testing.assert_array_equal(out[key], greedy[key], err_msg=key)


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "eager"])
def test_a_seed_repeats_and_seeds_differ(compiled):
    model = wide_model(seed=5)
    first = run_sample(model, compiled, seed=7, temperature=1.5)
    again = run_sample(model, compiled, seed=7, temperature=1.5)
    other = run_sample(model, compiled, seed=8, temperature=1.5)
    for key in first:
        np.testing.assert_array_equal(again[key], first[key], err_msg=key)
    assert not np.array_equal(other["tokens"], first["tokens"])


def test_scores_and_attention_follow_the_drawn_tokens():
    model = wide_model(seed=6)
    out = run_sample(model, seed=1, sampling="top_k", top_k=4)
    logp = decoding_reference.log_softmax(model.tables)
    for b in range(model.batch_size):
        sequence = out["tokens"][b, : out["lengths"][b]]
        tokens, score, length, attention = decoding_reference.sequence_info(
            logp[b], sequence, model.max_length
        )
        np.testing.assert_array_equal(out["tokens"][b], tokens)
        # The model's own log-probabilities, not the cut distribution's.
        np.testing.assert_allclose(out["scores"][b], score, atol=1e-4)
        np.testing.assert_allclose(out["attention"][b], attention)
        if length < model.max_length:
            assert sequence[-1] == END


def test_an_int_seed_equals_its_tensor():
    model = wide_model(seed=7)
    as_int = to_numpy(
        sample_search(
            model.step_fn(), model.initial_state(), START, END, 6, seed=3
        )
    )
    as_tensor = run_sample(model, compiled=False, seed=3)
    np.testing.assert_array_equal(as_int["tokens"], as_tensor["tokens"])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"sampling": "nucleus"}, "sampling"),
        ({"temperature": -1.0}, "temperature"),
        ({"sampling": "top_k"}, "top_k"),
        ({"sampling": "top_k", "top_k": 0}, "top_k"),
        ({"sampling": "top_p", "top_p": 0.0}, "top_p"),
        ({"sampling": "top_p", "top_p": 1.5}, "top_p"),
        ({"top_k": 3}, "top_k"),
        ({"top_p": 0.9}, "top_p"),
        ({"sampling": "greedy", "temperature": 0.5}, "temperature"),
        ({"seed": "seven"}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"max_length": 0}, "max_length"),
    ],
)
def test_invalid_arguments(kwargs, name):
    model = wide_model()
    arguments = {"max_length": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        sample_search(
            model.step_fn(), model.initial_state(), START, END, **arguments
        )
