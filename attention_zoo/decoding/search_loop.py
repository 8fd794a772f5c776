"""The loop scaffold shared by the searches (private).

Every search is the same loop: one step of the model before the loop
(its attention width sizes the attention buffer), then `ops.while_loop`
until every row has finished or `max_length` steps are written. They
differ only in how a step's logits become the next tokens (`advance`), in
their starting scores and in how the final buffers are read; `search_loop`
owns the rest, and `row_search` the searches with one hypothesis per row
(greedy and sampling), which differ only in how they pick a token.
"""

import collections

import keras
from keras import ops

# PAD, the token written after END (see the token-id convention).
PAD_ID = 0
# Log-probability of an impossible continuation: large but finite, so sums
# of several of them stay finite (never -inf, never NaN).
NEG_INF = -1e9

# The loop state of a search over `N` rows (`N = B` greedy, `B * K` beam):
# the previous tokens `(N,)`, the model's state, which rows are finished
# `(N,)`, the scores (`(N,)` greedy, `(B, K)` beam), the lengths `(N,)`
# and the token `(N, L)` and attention `(N, L, Ts)` buffers.
Carry = collections.namedtuple(
    "Carry",
    ["prev_ids", "state", "finished", "scores", "lengths", "tokens", "history"],
)


def batch_size_of(state):
    """Leading dimension of the first tensor of the nest `state`."""
    leaves = keras.tree.flatten(state)
    if not leaves:
        raise ValueError(
            "`initial_state` must contain at least one tensor with a "
            "leading batch dimension. Received: initial_state="
            f"{state!r}"
        )
    return ops.shape(leaves[0])[0]


def log_probs(logits):
    """`(N, V)` logits -> float32 log-softmax `(N, V)`."""
    return ops.log_softmax(ops.cast(logits, "float32"), axis=-1)


def write_step(buffer, index, values):
    """Writes `values` `(N, ...)` at time `index` of `buffer` `(N, L, ...)`."""
    values = ops.cast(values, buffer.dtype)[:, None]  # (N, 1, ...)
    start = [0, index] + [0] * (len(buffer.shape) - 2)
    return ops.slice_update(buffer, start, values)


def record(carry, index, next_ids, attention, end_id, **updates):
    """`carry` with `updates` applied (state, scores, lengths, reordered
    buffers...) and step `index` written: the tokens `next_ids` `(N,)` and
    `attention` `(N, Ts)`, PAD and zeros in the rows already finished; a
    row that emits `end_id` is finished from then on."""
    carry = carry._replace(**updates)
    live = ops.logical_not(carry.finished)
    next_ids = ops.where(live, next_ids, PAD_ID)
    attention = ops.where(live[:, None], attention, 0.0)
    return carry._replace(
        prev_ids=next_ids,
        finished=ops.logical_or(carry.finished, ops.equal(next_ids, end_id)),
        tokens=write_step(carry.tokens, index, next_ids),
        history=write_step(carry.history, index, attention),
    )


def search_loop(step_fn, state, advance, start_id, max_length, scores):
    """Runs a search to the end; returns its final `Carry`.

    Args:
        step_fn: `(token_ids, state, index) -> (logits, state, attention)`
            over `N` rows (see `greedy_search`).
        state: the model's state, a nest with leading dimension `N`.
        advance: `(index, logits, attention, carry) -> carry`: picks the
            next tokens from float32 logits `(N, V)`, updates scores,
            lengths and `finished`, and writes step `index` (`record`).
        start_id: int, the token fed at step 0.
        max_length: int, the number of steps (buffer length `L`).
        scores: the starting scores (the shape `advance` expects).
    """
    num_rows = batch_size_of(state)
    first = ops.convert_to_tensor(0, "int32")  # the first step's index
    start_ids = ops.full((num_rows,), start_id, "int32")
    logits, state, attention = step_fn(start_ids, state, first)
    attention = ops.cast(attention, "float32")  # (N, Ts): sizes the buffer
    carry = Carry(
        prev_ids=start_ids,
        state=state,
        finished=ops.zeros((num_rows,), "bool"),
        scores=scores,
        lengths=ops.zeros((num_rows,), "int32"),
        tokens=ops.zeros((num_rows, max_length), "int32"),
        history=ops.zeros(
            (num_rows, max_length) + tuple(ops.shape(attention)[1:]),
            "float32",
        ),
    )
    carry = advance(first, logits, attention, carry)

    def cond(index, carry):
        # Steps left and at least one unfinished row.
        return ops.logical_and(
            ops.less(index, max_length),
            ops.logical_not(ops.all(carry.finished)),
        )

    def body(index, carry):
        logits, state, attention = step_fn(carry.prev_ids, carry.state, index)
        attention = ops.cast(attention, "float32")
        carry = advance(index, logits, attention, carry._replace(state=state))
        return index + 1, carry

    _, carry = ops.while_loop(cond, body, (first + 1, carry))
    return carry


def row_search(step_fn, initial_state, start_id, end_id, max_length, pick):
    """A search with one hypothesis per row: `greedy_search` and
    `sample_search`. Returns their dict.

    `pick(index, log_probs) -> next_ids` chooses every row's next token
    int32 `(N,)` from the float32 log-softmax `(N, V)` of step `index`;
    each chosen token's log-probability is added to its row's score until
    the row emits `end_id`.
    """
    state = keras.tree.map_structure(ops.convert_to_tensor, initial_state)
    num_rows = batch_size_of(state)

    def advance(index, logits, attention, carry):
        """Picks the next token of every row and records it at `index`."""
        scores = log_probs(logits)  # (N, V)
        next_ids = ops.cast(pick(index, scores), "int32")  # (N,)
        chosen = ops.take_along_axis(scores, next_ids[:, None], axis=1)
        live = ops.logical_not(carry.finished)
        return record(
            carry,
            index,
            next_ids,
            attention,
            end_id,
            scores=carry.scores + ops.where(live, chosen[:, 0], 0.0),
            lengths=carry.lengths + ops.cast(live, "int32"),
        )

    carry = search_loop(
        step_fn,
        state,
        advance,
        start_id,
        max_length,
        scores=ops.zeros((num_rows,), "float32"),
    )
    return {
        "tokens": carry.tokens,
        "lengths": carry.lengths,
        "scores": carry.scores,
        "attention": carry.history,
    }
