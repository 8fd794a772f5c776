"""Beam search as one compiled loop, with the beams' histories in its state.

TensorFlow Addons and TF-NMT rebuild the beams' token histories after the
loop with the `GatherTree` op, which is not in core TensorFlow (a
SavedModel using it needs the extra op library to load). Here the token
and attention histories are part of the loop state and are reordered with
`ops.take` whenever the beams are reordered, so the whole search is made of
stock ops and compiles under XLA on both backends.
"""

import keras
from keras import ops

from attention_zoo.checks import check_non_negative
from attention_zoo.checks import check_positive_int
from attention_zoo.decoding import search_loop


def tile_beams(tensor_or_nest, beam_size):
    """Repeats every row `beam_size` times: row `b * beam_size + k` is `b`.

    Use it on the tensors a `step_fn` closes over (encoder outputs,
    projected keys, source masks) so that they line up with the
    `B * beam_size` rows that `beam_search` passes to `step_fn`.

    Args:
        tensor_or_nest: a tensor `(B, ...)` or a nest of them.
        beam_size: int >= 1.

    Returns:
        The same structure with tensors `(B * beam_size, ...)`.
    """
    check_positive_int("beam_size", beam_size)
    return keras.tree.map_structure(
        lambda x: ops.repeat(ops.convert_to_tensor(x), beam_size, axis=0),
        tensor_or_nest,
    )


def length_normalize(scores, lengths, length_penalty):
    """GNMT normalization `scores / ((5 + lengths) / 6) ** length_penalty`."""
    if not length_penalty:
        return scores
    lengths = ops.cast(lengths, "float32")
    return scores / ops.power((5.0 + lengths) / 6.0, length_penalty)


def coverage_log(coverage):
    """GNMT coverage `sum_i log(min(coverage_i, 1))` over the source
    positions `i` (every axis after the first) of accumulated attention
    `(N, Ts)`: `(N,)`, at most 0. Positions with no attention at all are
    left out (masked source positions get exactly zero weight), as in TF
    Addons' `BeamSearchDecoder`."""
    covered = ops.where(coverage > 0.0, ops.minimum(coverage, 1.0), 1.0)
    return ops.sum(ops.log(covered), axis=tuple(range(1, len(coverage.shape))))


def beam_search(
    step_fn,
    initial_state,
    start_id,
    end_id,
    max_length,
    beam_size=4,
    length_penalty=0.6,
    coverage_penalty=0.0,
):
    """Decodes with beam search, keeping `beam_size` hypotheses per example.

    Each example keeps `K = beam_size` beams. At every step each live beam
    is extended by every token of the vocabulary (float32 log-softmax added
    to its score); a finished beam (one that emitted `end_id`) is extended
    only by PAD (0) at zero cost, so it keeps its score and length and
    competes with its final normalized score. Of the `K * V` candidates of
    an example the `K` best by GNMT-normalized score

        normalized = score / ((5 + length) / 6) ** length_penalty

    are kept (`ops.top_k`), and the beams' states and histories are
    reordered with `ops.take`. With `coverage_penalty = beta > 0`, a
    finished hypothesis (one that ends with END at this step or before,
    and every hypothesis in the final ranking) is ranked by

        normalized + beta * sum_i log(min(sum_t attention_ti, 1))

    (GNMT's coverage penalty, from the attention history the search
    carries, END's step included; source positions that never get any
    attention, the masked ones, are left out), which favours hypotheses
    that attended to every source position.

    At step 0 only beam 0 of each example is live, so the beams start
    different. Impossible continuations get `-1e9`, never `-inf`, so no
    score becomes NaN. The loop stops early once every beam is finished;
    buffers always have `max_length` steps.

    With `beam_size=1` and no coverage penalty the result equals
    `greedy_search`.

    The search is one `ops.while_loop` (the first step runs before it, to
    learn the attention width) with fixed-size buffers, so it compiles
    whole under `tf.function(jit_compile=True)` and `jax.jit`, and uses
    no op outside core TensorFlow (no `GatherTree`).

    Args:
        step_fn: callable `(token_ids, state, index) -> (logits, state,
            attention)` as in `greedy_search`, called with
            `N = B * beam_size` rows (row `b * beam_size + k` is beam `k`
            of example `b`). Tile the tensors it closes over with
            `tile_beams`.
        initial_state: nest of tensors with leading dimension `B` (tiled
            here, do not tile it yourself).
        start_id: int, the token fed at the first step.
        end_id: int, the token that finishes a beam.
        max_length: int >= 1, the number of steps (buffer length).
        beam_size: int >= 1. Defaults to `4`.
        length_penalty: float `alpha >= 0` of the GNMT length penalty;
            `0` ranks by the raw sum of log-probabilities. Defaults to
            `0.6`.
        coverage_penalty: float `beta >= 0` of the GNMT coverage penalty;
            `0` turns it off (the search is then unchanged). Defaults to
            `0.0`.

    Returns:
        A dict with, for the best beam of each example: `tokens` int32
        `(B, max_length)` (without START, END where generated, PAD after
        it), `lengths` int32 `(B,)` (up to and including END), `scores`
        float32 `(B,)` (sum of log-probabilities), `normalized_scores`
        float32 `(B,)` (the score beams are ranked by: length-normalized,
        plus the coverage penalty), `attention` float32
        `(B, max_length, Ts)` (zero rows after END); and for all beams,
        best first: `beam_tokens` `(B, K, max_length)`, `beam_lengths`
        `(B, K)`, `beam_scores` `(B, K)`, `beam_normalized_scores`
        `(B, K)` and `beam_attention` `(B, K, max_length, Ts)`.

    Example:

    ```python
    # `encoder_outputs` (B, Ts, D); `state` the decoder state (B, H).
    memory = tile_beams(encoder_outputs, 4)  # (4B, Ts, D)

    def step_fn(token_ids, state, index):  # called with 4B rows
        ...  # attend over `memory`, return (logits, state, attention)

    out = beam_search(step_fn, state, 2, 3, max_length=20, beam_size=4)
    out["tokens"]  # (B, 20), the best beam of each example
    out["beam_tokens"]  # (B, 4, 20), all beams, best first
    ```

    Reference:
        Wu et al., "Google's Neural Machine Translation System: Bridging the
        Gap between Human and Machine Translation", 2016, section 7,
        https://arxiv.org/abs/1609.08144.
    """
    check_positive_int("max_length", max_length)
    check_positive_int("beam_size", beam_size)
    check_non_negative("length_penalty", length_penalty)
    check_non_negative("coverage_penalty", coverage_penalty)
    state = keras.tree.map_structure(ops.convert_to_tensor, initial_state)
    batch_size = search_loop.batch_size_of(state)
    state = tile_beams(state, beam_size)
    # Row offsets `b * K` of each example's first beam: (B, 1).
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * beam_size

    def advance(index, logits, attention, carry):
        """Extends, prunes and reorders the beams; records step `index`."""
        log_probs = search_loop.log_probs(logits)  # (N, V)
        vocabulary_size = ops.shape(log_probs)[-1]
        # A finished beam continues only with PAD, at zero cost.
        pad_only = ops.where(
            ops.arange(vocabulary_size) == search_loop.PAD_ID,
            0.0,
            search_loop.NEG_INF,
        )  # (V,)
        log_probs = ops.where(
            carry.finished[:, None], pad_only[None], log_probs
        )
        candidates = ops.reshape(carry.scores, (-1, 1)) + log_probs
        lengths = carry.lengths + ops.cast(
            ops.logical_not(carry.finished), "int32"
        )
        ranked = length_normalize(
            candidates, lengths[:, None], length_penalty
        )  # (N, V)
        if coverage_penalty:
            # The candidates that are finished (a finished parent's, or
            # END) pay for the attention their path gave the source.
            live = ops.logical_not(carry.finished)
            coverage = ops.sum(carry.history, axis=1) + ops.where(
                live[:, None], attention, 0.0
            )  # (N, Ts)
            penalty = coverage_penalty * coverage_log(coverage)  # (N,)
            ends = ops.logical_or(
                carry.finished[:, None],
                (ops.arange(vocabulary_size) == end_id)[None],
            )  # (N, V)
            ranked = ranked + ops.where(ends, penalty[:, None], 0.0)
        ranked = ops.reshape(ranked, (batch_size, -1))  # (B, K * V)
        candidates = ops.reshape(candidates, (batch_size, -1))
        _, top = ops.top_k(ranked, k=beam_size)  # (B, K) in [0, K * V)
        top = ops.cast(top, "int32")
        parents = ops.reshape(offsets + top // vocabulary_size, (-1,))  # (N,)
        next_ids = ops.reshape(top % vocabulary_size, (-1,))  # (N,)
        # Every beam's state and history follows its parent.
        state, finished, lengths, tokens, history, attention = (
            keras.tree.map_structure(
                lambda x: ops.take(x, parents, axis=0),
                (
                    carry.state,
                    carry.finished,
                    lengths,
                    carry.tokens,
                    carry.history,
                    attention,
                ),
            )
        )
        return search_loop.record(
            carry,
            index,
            next_ids,
            attention,
            end_id,
            state=state,
            finished=finished,
            scores=ops.take_along_axis(candidates, top, axis=1),  # (B, K)
            lengths=lengths,
            tokens=tokens,
            history=history,
        )

    # Only beam 0 of each example is live at first, so beams differ.
    initial_scores = ops.where(
        ops.arange(beam_size) == 0, 0.0, search_loop.NEG_INF
    )  # (K,)
    carry = search_loop.search_loop(
        step_fn,
        state,
        advance,
        start_id,
        max_length,
        scores=ops.tile(initial_scores[None], (batch_size, 1)),  # (B, K)
    )
    return _rank_beams(
        carry, batch_size, beam_size, length_penalty, coverage_penalty
    )


def _rank_beams(carry, batch_size, beam_size, length_penalty, coverage):
    """Sorts the beams by normalized score (with the coverage penalty
    `coverage`, every hypothesis being complete now); the best one is the
    answer.

    From the final `search_loop.Carry`: `scores` `(B, K)`, `lengths` `(N,)`,
    `tokens` `(N, L)`, `history` `(N, L, Ts)` with `N = B * K`.
    """
    scores, tokens, history = carry.scores, carry.tokens, carry.history
    lengths = ops.reshape(carry.lengths, (batch_size, beam_size))
    normalized = length_normalize(scores, lengths, length_penalty)
    if coverage:
        penalty = coverage * coverage_log(ops.sum(history, axis=1))  # (N,)
        normalized = normalized + ops.reshape(penalty, (batch_size, -1))
    normalized, order = ops.top_k(normalized, k=beam_size)  # (B, K)
    order = ops.cast(order, "int32")
    scores = ops.take_along_axis(scores, order, axis=1)
    lengths = ops.take_along_axis(lengths, order, axis=1)
    rows = ops.reshape(
        ops.arange(batch_size, dtype="int32")[:, None] * beam_size + order,
        (-1,),
    )  # (N,)
    tokens = ops.take(tokens, rows, axis=0)
    tokens = ops.reshape(tokens, (batch_size, beam_size, -1))
    history = ops.take(history, rows, axis=0)
    history = ops.reshape(
        history, (batch_size, beam_size) + tuple(ops.shape(history)[1:])
    )
    return {
        "tokens": tokens[:, 0],
        "lengths": lengths[:, 0],
        "scores": scores[:, 0],
        "normalized_scores": normalized[:, 0],
        "attention": history[:, 0],
        "beam_tokens": tokens,
        "beam_lengths": lengths,
        "beam_scores": scores,
        "beam_normalized_scores": normalized,
        "beam_attention": history,
    }
