"""`decode`: greedy or beam search over a `DecodingAdapter`, compiled once
per configuration and input bucket.

Like keras-hub's samplers (one `Sampler.__call__` driving a model's `next`
function, compiled by the model's `generate_function`), the search is the
library's and the model only says how to take one step. Unlike them, the
driver also owns the compiled-function cache and the bucketing, so an
application's evaluation loop meets a handful of compiled shapes and never
retraces.
"""

import keras
from keras import ops

from attention_zoo.checks import check_positive_int
from attention_zoo.decoding import buckets
from attention_zoo.decoding.adapter import step_function
from attention_zoo.decoding.beam_search import beam_search
from attention_zoo.decoding.beam_search import tile_beams
from attention_zoo.decoding.compiler import compile_function
from attention_zoo.decoding.greedy_search import greedy_search

# Batches are padded to a power of two up to this, then to a multiple of it.
BATCH_MULTIPLE = 64


def decode(
    adapter,
    inputs,
    *,
    start_id,
    end_id,
    max_length,
    beam_size=1,
    length_penalty=0.0,
    jit_compile=True,
):
    """Generates token sequences from `inputs` with the model `adapter`.

    With `beam_size=1` this is `greedy_search`, otherwise `beam_search`
    with `beam_size` beams (the memory tiled with `tile_beams`) ranked by
    the GNMT length penalty. Before the search, `inputs` are padded with
    zeros (PAD) to a bucket: the batch to a power of two, or a multiple of
    64 past 64, and the length axis of int inputs to a multiple of
    `adapter.length_multiple` if it sets one (see `DecodingAdapter`). The
    results are cut back to the caller's batch (and source length), then
    passed through `adapter.finalize(result, inputs)`.

    The search is compiled whole, once per configuration (the keyword
    arguments) and bucket (padded shapes and dtypes), with the active
    backend's compiler (`tf.function(jit_compile=...)` or `jax.jit`; see
    `compiler.compile_function`), and cached on the adapter: calls with
    batches of any size meet a few compiled functions, each traced once.
    Inside an outer `tf.function` (an export's `serve`) the shapes may be
    unknown: the padding is then computed in the graph, and one function
    per configuration serves every shape (XLA compiles each bucket when
    it first runs).

    Args:
        adapter: a `DecodingAdapter` (or an object with its methods).
        inputs: a tensor or nest of tensors with leading dimension `B`,
            what `adapter.encode` takes (token ids, images).
        start_id: int, the token fed at the first step.
        end_id: int, the token that finishes a sequence.
        max_length: int >= 1, the number of steps `L`.
        beam_size: int >= 1. Defaults to `1` (greedy).
        length_penalty: float >= 0, `alpha` of the GNMT length penalty
            (beam search only). Defaults to `0.0`.
        jit_compile: bool, compile with XLA (on TensorFlow `False` gives a
            graph function, on JAX op-by-op execution). Defaults to `True`.

    Returns:
        A dict with `tokens` int32 `(B, L)` (END included, PAD after it),
        `lengths` int32 `(B,)` (up to and including END), `scores`
        float32 `(B,)` (sum of log-probabilities) and `attention` float32
        `(B, L, Ts)` (zero rows after END), as `adapter.finalize` leaves
        them; beam search adds the other keys of `beam_search`.

    Example:

    ```python
    adapter = MyDecoder(model)  # a DecodingAdapter
    result = decode(adapter, source_ids, start_id=2, end_id=3,
                    max_length=50, beam_size=4, length_penalty=0.6)
    result["tokens"]  # (B, 50)
    ```
    """
    check_positive_int("max_length", max_length)
    check_positive_int("beam_size", beam_size)
    if (
        isinstance(length_penalty, bool)
        or not isinstance(length_penalty, (int, float))
        or length_penalty < 0
    ):
        raise ValueError(
            "`length_penalty` must be a number >= 0. "
            f"Received: length_penalty={length_penalty!r}"
        )
    inputs = keras.tree.map_structure(ops.convert_to_tensor, inputs)
    padded, batch, length = _pad_inputs(
        inputs, getattr(adapter, "length_multiple", None)
    )
    config = (
        int(start_id),
        int(end_id),
        max_length,
        beam_size,
        float(length_penalty) if beam_size > 1 else 0.0,  # unused by greedy
        bool(jit_compile),
    )
    bucket = tuple(
        (tuple(x.shape), keras.backend.standardize_dtype(x.dtype))
        for x in keras.tree.flatten(padded)
    )
    result = _compiled_search(adapter, config, bucket)(padded)
    result = {key: buckets.unpad(value, batch) for key, value in result.items()}
    if length is not None:  # (B, L, Ts) back to the caller's source length
        result["attention"] = buckets.unpad(result["attention"], batch, length)
    finalize = getattr(adapter, "finalize", None)
    return result if finalize is None else finalize(result, inputs)


def _pad_inputs(inputs, length_multiple):
    """`(padded, batch, length)`: `inputs` padded to a bucket, their batch
    size and the length of the first length-padded input (or `None`)."""
    leaves = keras.tree.flatten(inputs)
    if not leaves:
        raise ValueError(
            "`inputs` must contain at least one tensor with a leading "
            f"batch dimension. Received: inputs={inputs!r}"
        )
    batch = ops.shape(leaves[0])[0]
    padded_batch = buckets.bucket_batch_size(batch, BATCH_MULTIPLE)
    lengths = []

    def pad(x):
        sizes = [padded_batch]
        dtype = keras.backend.standardize_dtype(x.dtype)
        if length_multiple and len(x.shape) >= 2 and "int" in dtype:
            lengths.append(ops.shape(x)[1])
            sizes.append(buckets.bucket_length(lengths[-1], length_multiple))
        return buckets.pad_axes(x, sizes)

    padded = keras.tree.map_structure(pad, inputs)
    return padded, batch, (lengths[0] if lengths else None)


def _compiled_search(adapter, config, bucket):
    """The search for `config` and `bucket`, compiled on first use and
    cached on the adapter. Each entry compiles its own new closure: TF's
    retracing warning counts traces per Python function, and each of
    these traces once."""
    cache = vars(adapter).setdefault("_decode_cache", {})
    key = (config, bucket)
    if key not in cache:
        cache[key] = compile_function(
            _search_function(adapter, *config[:5]), jit_compile=config[5]
        )
    return cache[key]


def _search_function(
    adapter, start_id, end_id, max_length, beam_size, length_penalty
):
    """`inputs -> dict`: encode, then greedy or beam search."""

    def search(inputs):
        memory = adapter.encode(inputs)
        state = adapter.initial_state(memory)
        if beam_size == 1:
            return greedy_search(
                step_function(adapter, memory),
                state,
                start_id,
                end_id,
                max_length,
            )
        return beam_search(
            step_function(adapter, tile_beams(memory, beam_size)),
            state,
            start_id,
            end_id,
            max_length,
            beam_size=beam_size,
            length_penalty=length_penalty,
        )

    return search
