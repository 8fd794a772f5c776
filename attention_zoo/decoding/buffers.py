"""Helpers shared by `greedy_search` and `beam_search` (private)."""

import keras
from keras import ops

# PAD, the token written after END (see the token-id convention).
PAD_ID = 0
# Log-probability of an impossible continuation: large but finite, so sums
# of several of them stay finite (never -inf, never NaN).
NEG_INF = -1e9


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


def make_buffers(batch_size, max_length, attention):
    """Zero token `(N, L)` int32 and attention `(N, L, Ts)` float32 buffers."""
    tokens = ops.zeros((batch_size, max_length), "int32")
    attention_history = ops.zeros(
        (batch_size, max_length) + tuple(ops.shape(attention)[1:]),
        "float32",
    )
    return tokens, attention_history


def keep_going(index, max_length, finished):
    """Loop condition: steps left and at least one unfinished row."""
    return ops.logical_and(
        ops.less(index, max_length),
        ops.logical_not(ops.all(finished)),
    )


def run_first_step(step_fn, state, start_id, num_rows, max_length):
    """The first decoding step, before the loop, and the empty buffers.

    Running it outside the loop gives the width `Ts` of the attention
    weights, which sizes the attention buffer.

    Returns:
        `(start_ids, logits, state, attention, tokens, history)`.
    """
    start_ids = ops.full((num_rows,), start_id, "int32")
    first = ops.convert_to_tensor(0, "int32")  # the step index
    logits, state, attention = step_fn(start_ids, state, first)
    attention = ops.cast(attention, "float32")
    tokens, history = make_buffers(num_rows, max_length, attention)
    return start_ids, logits, state, attention, tokens, history


def loop_step(step_fn, advance):
    """The loop body: one `step_fn` call, then `advance` on its results."""

    def step(index, carry):
        prev_ids, state = carry[0], carry[1]
        logits, state, attention = step_fn(prev_ids, state, index)
        attention = ops.cast(attention, "float32")
        return advance(index, logits, attention, (prev_ids, state) + carry[2:])

    return step
