"""Helpers shared by `greedy_search` and `beam_search` (private)."""

import keras
from keras import ops

# PAD, the token written after END (see the token-id convention).
PAD_ID = 0
# Log-probability of an impossible continuation: large but finite, so sums
# of several of them stay finite (never -inf, never NaN).
NEG_INF = -1e9


def check_positive_int(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(
            f"`{name}` must be a positive integer. Received: {name}={value!r}"
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
