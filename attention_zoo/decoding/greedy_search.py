"""Greedy decoding as one compiled loop."""

from keras import ops

from attention_zoo.checks import check_positive_int
from attention_zoo.decoding import search_loop


def greedy_search(step_fn, initial_state, start_id, end_id, max_length):
    """Decodes by always taking the most likely next token.

    At step `t` the model sees the previous token (`start_id` at `t = 0`)
    and returns logits; the next token is their argmax and its float32
    log-softmax is added to the row's score. A row that has emitted
    `end_id` is finished: its later tokens are PAD (0), its score and
    length stop changing and its attention rows are zero. The loop stops
    early once every row is finished, but the buffers always have
    `max_length` steps.

    All steps run inside one `ops.while_loop` with fixed-size buffers
    (`ops.slice_update`), so the call compiles whole under
    `tf.function(jit_compile=True)` or `jax.jit` and uses only core ops.
    The first step runs before the loop, to learn the source length `Ts`
    of the attention weights.

    Args:
        step_fn: callable `(token_ids, state, index) -> (logits, state,
            attention)`: `token_ids` int32 `(B,)`, `state` a nest of tensors
            with leading dimension `B`, `index` scalar int32 step number;
            returns logits `(B, V)`, the new state (same structure, shapes
            and dtypes) and attention weights `(B, Ts)` (zeros `(B, 1)` for
            a model without attention). Tensors that do not change between
            steps (encoder outputs, projected keys, masks) belong in its
            closure, not in `state`.
        initial_state: nest of tensors with leading dimension `B`.
        start_id: int, the token fed at the first step.
        end_id: int, the token that finishes a row.
        max_length: int >= 1, the number of steps (buffer length).

    Returns:
        A dict with `tokens` int32 `(B, max_length)` (without START, with
        END where generated, PAD after it), `lengths` int32 `(B,)` (tokens
        up to and including END), `scores` float32 `(B,)` (sum of the
        chosen tokens' log-probabilities) and `attention` float32
        `(B, max_length, Ts)`.

    Example:

    ```python
    # A toy model: the next token's logits depend on the previous token.
    table = np.log(np.full((5, 5), 0.1) + np.eye(5)[[1, 3, 4, 4, 3]])

    def step_fn(token_ids, state, index):
        logits = ops.take(table, token_ids, axis=0)  # (B, V)
        attention = ops.zeros((ops.shape(token_ids)[0], 1))  # (B, Ts)
        return logits, state + 1, attention

    out = greedy_search(step_fn, np.zeros((2,), "int32"), 2, 3, 4)
    # out["tokens"]: [[4, 3, 0, 0], [4, 3, 0, 0]]; out["lengths"]: [2, 2]
    ```
    """
    check_positive_int("max_length", max_length)

    def pick(index, log_probs):
        return ops.argmax(log_probs, axis=-1)  # (B,)

    return search_loop.row_search(
        step_fn, initial_state, start_id, end_id, max_length, pick
    )
