"""Which token `sample_search` draws: the Gumbel-max trick with the
counter-based noise, recomputed in NumPy
(`decoding_reference.np_gumbel`), so the same seed draws the same tokens on
TensorFlow and JAX, compiled or not, and a row draws the same tokens
whatever batch it is in."""

import numpy as np
import pytest

from tests.support import decoding_reference
from tests.support.decoding_reference import END
from tests.support.decoding_reference import START
from tests.support.decoding_reference import FakeModel
from tests.support.decoding_reference import run_sample
from tests.support.decoding_reference import wide_model

SEEDS = np.array([0, 1, 2, 3, 2**31, 2**32 - 1, 12345, 7], "uint32")


def _kept(log_probs, sampling, top_k, top_p):
    """NumPy: the token ids the cut keeps."""
    order = np.argsort(-log_probs, kind="stable")
    if sampling == "top_k":
        return order[:top_k]
    if sampling == "top_p":
        p = np.exp(log_probs - log_probs.max())
        p /= p.sum()
        mass = np.cumsum(p[order])
        return order[: int(np.searchsorted(mass, top_p)) + 1]
    return order


def _expected_tokens(model, seeds, temperature, sampling, top_k, top_p):
    """NumPy: each row's tokens, drawn as `argmax(logp / T + gumbel)` over
    the kept ids, with the row's noise `np_gumbel(seed, step, id)`."""
    logp = decoding_reference.log_softmax(model.tables)
    ids = np.arange(model.vocabulary_size)[None]
    rows = []
    for b in range(model.batch_size):
        prev, tokens = START, []
        for t in range(model.max_length):
            row = logp[b, t, prev]
            noise = decoding_reference.np_gumbel(seeds[b : b + 1], t, ids)[0]
            kept = _kept(row / temperature, sampling, top_k, top_p)
            token = int(kept[np.argmax(row[kept] / temperature + noise[kept])])
            tokens.append(token)
            prev = token
            if token == END:
                break
        rows.append(tokens)
    return rows


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "eager"])
@pytest.mark.parametrize(
    "sampling, top_k, top_p, temperature",
    [
        ("temperature", None, None, 1.0),
        ("temperature", None, None, 2.5),
        ("top_k", 3, None, 1.0),
        ("top_p", None, 0.7, 0.8),
    ],
)
def test_draws_equal_the_gumbel_max_reference(
    compiled, sampling, top_k, top_p, temperature
):
    model = wide_model(batch_size=8)
    out = run_sample(
        model,
        compiled,
        SEEDS,
        sampling=sampling,
        top_k=top_k,
        top_p=top_p,
        temperature=temperature,
    )
    expected = _expected_tokens(
        model, SEEDS, temperature, sampling, top_k, top_p
    )
    for b, tokens in enumerate(expected):
        assert out["lengths"][b] == len(tokens), b
        np.testing.assert_array_equal(
            out["tokens"][b, : len(tokens)], tokens, err_msg=str(b)
        )


def test_an_int_seed_gives_row_i_the_seed_plus_i():
    model = wide_model(batch_size=8)
    as_int = run_sample(model, seed=np.int32(40), temperature=1.5)
    rows = np.arange(40, 48, dtype="int32")
    as_rows = run_sample(model, seed=rows, temperature=1.5)
    np.testing.assert_array_equal(as_int["tokens"], as_rows["tokens"])
    # Signed and unsigned spellings of the same 32 bits draw alike.
    signed = run_sample(model, seed=SEEDS.astype("int32"), temperature=1.5)
    unsigned = run_sample(model, seed=SEEDS, temperature=1.5)
    np.testing.assert_array_equal(signed["tokens"], unsigned["tokens"])


def test_a_row_draws_alike_in_any_batch():
    model = wide_model(batch_size=8, seed=3)
    whole = run_sample(model, seed=SEEDS, sampling="top_p", top_p=0.9)
    for rows in ([5], [2, 7, 0], [6, 1, 3, 4, 5]):
        part = FakeModel(model.tables[rows])
        alone = run_sample(part, seed=SEEDS[rows], sampling="top_p", top_p=0.9)
        for key in ("tokens", "lengths", "scores"):
            np.testing.assert_array_equal(alone[key], whole[key][rows], key)


def test_frequencies_follow_the_tempered_distribution():
    # 4000 rows with the same logits, each its own seed: the first token's
    # counts against softmax(logits / T) (chi-square, 7 degrees of
    # freedom, 0.999 quantile 24.3), and the first two tokens independent
    # given the table (no row repeats its first draw).
    rng = np.random.default_rng(9)
    table = rng.normal(size=(8, 8)).astype("float32")
    table[:, END] = -30.0  # END is never drawn: every row runs 2 steps
    rows, temperature = 4000, 1.7
    tables = np.broadcast_to(table, (rows, 2, 8, 8)).copy()
    model = FakeModel(tables)
    out = run_sample(model, seed=np.int32(11), temperature=temperature)
    first = out["tokens"][:, 0]
    p = np.exp(decoding_reference.log_softmax(table[START] / temperature))
    counts = np.bincount(first, minlength=8)
    expected = rows * p
    seen = expected > 1e-9
    chi2 = ((counts[seen] - expected[seen]) ** 2 / expected[seen]).sum()
    assert chi2 < 24.3, (counts, expected)
    assert counts[~seen].sum() == 0
    # The second token's distribution given the first (its own table row).
    second = out["tokens"][:, 1]
    for token in np.unique(first):
        given = second[first == token]
        if len(given) < 400:
            continue
        q = np.exp(decoding_reference.log_softmax(table[token] / temperature))
        got = np.bincount(given, minlength=8)
        want = len(given) * q
        keep = want > 5
        assert ((got[keep] - want[keep]) ** 2 / want[keep]).sum() < 24.3
