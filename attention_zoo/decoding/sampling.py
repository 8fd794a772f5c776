"""Sampling as one compiled loop: temperature, top-k and top-p (nucleus).

As with keras-hub's samplers (`TopKSampler`, `TopPSampler`), each step's
next token is drawn from the model's distribution, sharpened or flattened
by a temperature, and cut to its `top_k` likeliest tokens or to the
smallest set whose probability reaches `top_p` (Holtzman et al., 2019).
Each row has a seed of its own, and its draws are a function of that seed,
the step and the token ids alone (the Gumbel-max trick with the counter-based
noise of `counter_random`): a row draws the same tokens whatever batch it
is in (served requests are batched with others and padded to buckets), on
TensorFlow and JAX, with XLA or without. The loop compiles under XLA on
both backends, and the seeds are an argument of the compiled search (a
new seed never recompiles).
"""

import random

import keras
import numpy as np
from keras import ops

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_non_negative
from attention_zoo.checks import check_positive_int
from attention_zoo.decoding import counter_random
from attention_zoo.decoding import search_loop

SAMPLING = ("greedy", "temperature", "top_k", "top_p")


def sample_search(
    step_fn,
    initial_state,
    start_id,
    end_id,
    max_length,
    sampling="temperature",
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed=None,
):
    """Decodes by drawing each next token from the model's distribution.

    The loop is `greedy_search`'s (END handling, buffers, early stop) with
    another choice of token: at step `t` the float32 log-softmax is
    divided by `temperature`, cut by `sampling`, and one token is drawn
    per row: the argmax of the cut logits plus Gumbel noise computed from
    the row's seed, `t` and each token's id (`counter_random.gumbel`).
    `temperature=0` (or `sampling="greedy"`) takes the argmax, which is
    `greedy_search` exactly. Scores are the model's own log-probabilities
    of the drawn tokens (before temperature and cut), as in greedy search.

    A row's draws depend on its seed and its own distributions only: the
    same seed gives the same tokens in any batch, on either backend,
    compiled or not (up to float rounding of the model itself).

    Args:
        step_fn: callable `(token_ids, state, index) -> (logits, state,
            attention)`, as in `greedy_search`.
        initial_state: nest of tensors with leading dimension `B`.
        start_id: int, the token fed at the first step.
        end_id: int, the token that finishes a row.
        max_length: int >= 1, the number of steps (buffer length).
        sampling: str, `"temperature"` (the whole vocabulary), `"top_k"`,
            `"top_p"` or `"greedy"`. Defaults to `"temperature"`.
        temperature: float >= 0; below 1 sharpens the distribution, above
            1 flattens it, 0 is the argmax. Defaults to `1.0`.
        top_k: int >= 1, with `sampling="top_k"` only: draw among the `k`
            likeliest tokens.
        top_p: float in `(0, 1]`, with `sampling="top_p"` only: draw among
            the smallest set of likeliest tokens whose probability (after
            temperature) reaches `top_p`.
        seed: int or int scalar tensor (row `i` gets `seed + i`), int
            tensor `(B,)` (each row's seed), or `None` to draw an int with
            Python's `random` (which `keras.utils.set_random_seed` seeds).
            See `row_seeds`. Defaults to `None`.

    Returns:
        A dict with `tokens`, `lengths`, `scores` and `attention`, as
        `greedy_search`.

    Example:

    ```python
    out = sample_search(step_fn, state, 2, 3, max_length=20,
                        sampling="top_p", top_p=0.9, temperature=0.8,
                        seed=1)
    out["tokens"]  # (B, 20), the same for the same seed
    ```
    """
    check_positive_int("max_length", max_length)
    check_sampling(sampling, temperature, top_k, top_p)
    state = keras.tree.map_structure(ops.convert_to_tensor, initial_state)
    seeds = row_seeds(seed, search_loop.batch_size_of(state))
    pick = _sampler(sampling, temperature, top_k, top_p, seeds)
    return search_loop.row_search(
        step_fn, state, start_id, end_id, max_length, pick
    )


def top_k_logits(logits, top_k):
    """The `top_k` largest logits of each row of `(N, V)` and their token
    ids: `(N, k)` float and int32 `(N, k)`, best first (`k` is `top_k`, or
    `V` if that is smaller)."""
    vocabulary_size = logits.shape[-1]
    if isinstance(vocabulary_size, int):
        top_k = min(top_k, vocabulary_size)
    values, ids = ops.top_k(logits, k=top_k)
    return values, ops.cast(ids, "int32")


def top_p_logits(logits, top_p):
    """The nucleus of each row of `(N, V)`: `(logits, token_ids)`, both
    `(N, V)` and sorted best first, with the logits past the smallest
    prefix whose softmax probability reaches `top_p` set to `-1e9`."""
    values, ids = ops.top_k(logits, k=ops.shape(logits)[-1])  # sorted
    probabilities = ops.softmax(values, axis=-1)
    # The probability of the tokens before each one: a token is kept while
    # the better ones have not reached `top_p` yet (the first always is).
    before = ops.cumsum(probabilities, axis=-1) - probabilities
    kept = ops.where(before < top_p, values, search_loop.NEG_INF)
    return kept, ops.cast(ids, "int32")


def top_p_mask(logits, top_p):
    """The nucleus of each row of `(N, V)` without sorting: bool `(N, V)`,
    True for the tokens `top_p_logits` keeps (and any token tied with the
    last of them).

    The kept tokens are those whose softmax probability is at least a
    threshold `t`, the largest probability with `sum(p >= t) >= top_p`.
    `t` is found by bisection over the probabilities' float32 bits, which
    order non-negative floats as integers: 31 halvings of `[0, 2 ** 31)`
    reach it exactly, each one masked sum over the row. On a CPU this is
    an order of magnitude faster than the full sort of `top_p_logits`
    (`benchmarks/sampling_bench.py`).
    """
    if isinstance(top_p, (int, float)) and top_p >= 1:
        # Every token (float sums may reach 1 before the tail).
        return ops.ones_like(logits, dtype="bool")
    probabilities = ops.softmax(ops.cast(logits, "float32"), axis=-1)
    bits = ops.view(probabilities, "int32")  # (N, V), order-preserving
    # mass(p >= low) >= top_p (or low = 0: every token); mass(high) < top_p.
    low = ops.zeros(ops.shape(bits)[:1], "int32")
    high = ops.max(bits, axis=-1) + 1

    def halve(_, bounds):
        low, high = bounds
        middle = low + (high - low) // 2
        mass = ops.sum(
            ops.where(bits >= middle[:, None], probabilities, 0.0), axis=-1
        )
        enough = mass >= top_p
        return ops.where(enough, middle, low), ops.where(enough, high, middle)

    low, _ = ops.fori_loop(0, 31, halve, (low, high))
    return bits >= low[:, None]


def check_sampling(
    sampling, temperature=1.0, top_k=None, top_p=None, name="sampling"
):
    """The sampling arguments, checked together: `sampling` is `None` (no
    sampling) or one of `SAMPLING`; `temperature`, `top_k` and `top_p` are
    valid, and set only where `sampling` uses them. `name` is the
    strategy's argument name in the messages (`Sampling`'s `strategy`)."""
    if sampling is not None:
        check_choice(name, sampling, SAMPLING)
    check_non_negative("temperature", temperature)
    if sampling in (None, "greedy") and temperature != 1.0:
        raise ValueError(
            f"`temperature` is used only with {name}='temperature', "
            f"'top_k' or 'top_p'. Received: temperature={temperature!r}, "
            f"{name}={sampling!r}"
        )
    if sampling == "top_k":
        check_positive_int("top_k", top_k)
    elif top_k is not None:
        raise ValueError(
            f"`top_k` is used only with {name}='top_k'. Received: "
            f"top_k={top_k!r}, {name}={sampling!r}"
        )
    if sampling == "top_p":
        if (
            isinstance(top_p, bool)
            or not isinstance(top_p, (int, float))
            or not 0 < top_p <= 1
        ):
            raise ValueError(
                f"`top_p` must be a number in (0, 1]. Received: top_p={top_p!r}"
            )
    elif top_p is not None:
        raise ValueError(
            f"`top_p` is used only with {name}='top_p'. Received: "
            f"top_p={top_p!r}, {name}={sampling!r}"
        )


def row_seeds(seed, num_rows):
    """Every row's sampling seed, `uint32` `(num_rows,)`.

    `seed` is an int, an int scalar tensor, or `None` (a new one from
    Python's `random`, which `keras.utils.set_random_seed` seeds): row `i`
    gets `seed + i` (modulo `2 ** 32`). Or it is an int tensor (or list)
    `(num_rows,)` with each row's own seed. Signed seeds count by their
    32 low bits: `-1` is `2 ** 32 - 1`.
    """
    if seed is None:
        seed = random.getrandbits(32)
    if isinstance(seed, (list, tuple)):
        seed = np.asarray(seed)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seed = int(seed)
        shape = ()
    else:
        dtype = getattr(seed, "dtype", None)
        shape = tuple(seed.shape) if hasattr(seed, "shape") else ()
        if (
            dtype is None
            or "int" not in keras.backend.standardize_dtype(dtype)
            or len(shape) > 1
        ):
            raise ValueError(
                "`seed` must be an int, an integer tensor of one seed per "
                f"row, or None. Received: seed={seed!r}"
            )
    if len(shape) == 1:
        if isinstance(num_rows, int) and shape[0] not in (None, num_rows):
            raise ValueError(
                f"`seed` must have one seed per row ({num_rows} rows). "
                f"Received: seed of shape {shape}"
            )
        return counter_random.as_uint32(seed)
    return counter_random.as_uint32(seed) + ops.cast(
        ops.arange(num_rows), "uint32"
    )


def _sampler(sampling, temperature, top_k, top_p, seeds):
    """`pick(index, log_probs) -> next_ids` for `search_loop.row_search`;
    `seeds` are the rows' `uint32` `(N,)`."""

    def pick(index, log_probs):
        if sampling == "greedy" or temperature == 0:
            return ops.argmax(log_probs, axis=-1)
        logits = log_probs / temperature  # (N, V)
        ids = ops.arange(ops.shape(logits)[-1], dtype="int32")[None]  # (1, V)
        if sampling == "top_k":
            logits, ids = top_k_logits(logits, top_k)  # (N, k)
        elif sampling == "top_p":
            kept = top_p_mask(logits, top_p)  # (N, V): no sort
            logits = ops.where(kept, logits, search_loop.NEG_INF)
        # The Gumbel-max trick, with noise of (row seed, step, token id)
        # only: a row draws alike in any batch, on any backend.
        noise = counter_random.gumbel(
            counter_random.step_keys(seeds, index), ids
        )
        drawn = ops.argmax(logits + noise, axis=-1)  # (N,): a position
        ids = ops.broadcast_to(ids, ops.shape(logits))
        return ops.take_along_axis(ids, drawn[:, None], axis=1)[:, 0]

    return pick
