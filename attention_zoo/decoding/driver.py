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

from attention_zoo.checks import check_non_negative
from attention_zoo.checks import check_positive_int
from attention_zoo.decoding import buckets
from attention_zoo.decoding import sampling as sampling_lib
from attention_zoo.decoding.adapter import step_function
from attention_zoo.decoding.beam_search import beam_search
from attention_zoo.decoding.beam_search import tile_beams
from attention_zoo.decoding.compiler import compile_function
from attention_zoo.decoding.greedy_search import greedy_search

# Batches are padded to a power of two up to this, then to a multiple of it.
BATCH_MULTIPLE = 64
# The keys that get a hypothesis axis `(B, N, ...)` with `num_results > 1`.
HYPOTHESIS_KEYS = ("tokens", "lengths", "scores", "normalized_scores")


def decode(
    adapter,
    inputs,
    *,
    start_id,
    end_id,
    max_length,
    beam_size=1,
    length_penalty=0.0,
    coverage_penalty=0.0,
    num_results=1,
    sampling=None,
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed=None,
    jit_compile=True,
):
    """Generates token sequences from `inputs` with the model `adapter`.

    With `beam_size=1` this is `greedy_search`, otherwise `beam_search`
    with `beam_size` beams (the memory tiled with `tile_beams`) ranked by
    the GNMT length and coverage penalties, of which the `num_results`
    best come back; with `sampling` it is `sample_search`. Before the
    search, `inputs` are padded with zeros (PAD) to a bucket: the batch to
    a power of two, or a multiple of 64 past 64, and the length axis of
    int inputs to a multiple of `adapter.length_multiple` if it sets one
    (see `DecodingAdapter`). The results are cut back to the caller's
    batch (and source length), then passed through
    `adapter.finalize(result, inputs)`.

    The search is compiled whole, once per configuration (the keyword
    arguments) and bucket (padded shapes and dtypes), with the active
    backend's compiler (`tf.function(jit_compile=...)` or `jax.jit`; see
    `compiler.compile_function`), and cached on the adapter: calls with
    batches of any size meet a few compiled functions, each traced once.
    Inside an outer `tf.function` (an export's `serve`) the shapes may be
    unknown: the padding is then computed in the graph, and one function
    per configuration serves every shape (XLA compiles each bucket when
    it first runs). The sampling seed and `num_results` are not part of
    the configuration: changing them compiles nothing.

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
        coverage_penalty: float >= 0, `beta` of the GNMT coverage penalty
            (beam search only, see `beam_search`). Defaults to `0.0`.
        num_results: int, `1 <= num_results <= beam_size`: how many of the
            best beams to return (see Returns). Defaults to `1`.
        sampling: `None` (search), or draw each token (`beam_size=1`):
            `"temperature"`, `"top_k"`, `"top_p"` or `"greedy"` (see
            `sample_search`). Defaults to `None`.
        temperature: float >= 0, with sampling; `0` is greedy. Defaults
            to `1.0`.
        top_k: int >= 1, with `sampling="top_k"`. Defaults to `None`.
        top_p: float in `(0, 1]`, with `sampling="top_p"`. Defaults to
            `None`.
        seed: with sampling, every row's seed: an int or int scalar
            tensor (row `i` gets `seed + i`), an int tensor `(B,)` (one
            seed per row), or `None` (a new int per call, or per trace
            inside an outer compiled function). A row's draws depend on
            its seed and inputs only, not on the rest of the batch or the
            padding (see `sample_search`). Defaults to `None`.
        jit_compile: bool, compile with XLA (on TensorFlow `False` gives a
            graph function, on JAX op-by-op execution). Defaults to `True`.

    Returns:
        A dict with `tokens` int32 `(B, L)` (END included, PAD after it),
        `lengths` int32 `(B,)` (up to and including END), `scores`
        float32 `(B,)` (sum of log-probabilities) and `attention` float32
        `(B, L, Ts)` (zero rows after END), as `adapter.finalize` leaves
        them; beam search adds the other keys of `beam_search`
        (`normalized_scores` and the `beam_*` keys of all beams). With
        `num_results = N > 1`, `tokens`, `lengths`, `scores`,
        `normalized_scores` and `attention` hold the `N` best beams, best
        first: `(B, N, L)`, `(B, N)`, `(B, N)`, `(B, N)` and
        `(B, N, L, Ts)`.

    Example:

    ```python
    adapter = MyDecoder(model)  # a DecodingAdapter
    result = decode(adapter, source_ids, start_id=2, end_id=3,
                    max_length=50, beam_size=4, length_penalty=0.6)
    result["tokens"]  # (B, 50)
    ```
    """
    sampler = _check_options(
        max_length,
        beam_size,
        length_penalty,
        coverage_penalty,
        num_results,
        (sampling, temperature, top_k, top_p),
    )
    inputs = keras.tree.map_structure(ops.convert_to_tensor, inputs)
    padded, batch, length = _pad_inputs(
        inputs, getattr(adapter, "length_multiple", None)
    )
    beams = beam_size > 1  # the penalties are unused by the other searches
    config = (
        int(start_id),
        int(end_id),
        max_length,
        beam_size,
        float(length_penalty) if beams else 0.0,
        float(coverage_penalty) if beams else 0.0,
        sampler,
        bool(jit_compile),
    )
    bucket = tuple(
        (tuple(x.shape), keras.backend.standardize_dtype(x.dtype))
        for x in keras.tree.flatten(padded)
    )
    search = _compiled_search(adapter, config, bucket)
    if sampler is None:
        result = search(padded)
    else:
        # The rows' seeds, padded with the batch (see `row_seeds`).
        seeds = sampling_lib.row_seeds(seed, batch)
        padded_batch = ops.shape(keras.tree.flatten(padded)[0])[0]
        result = search(padded, buckets.pad_axes(seeds, [padded_batch]))
    result = {key: buckets.unpad(value, batch) for key, value in result.items()}
    for key in ("attention", "beam_attention"):
        if length is not None and key in result:  # (..., Ts) cut back
            result[key] = buckets.unpad(result[key], batch, length)
    finalize = getattr(adapter, "finalize", None)
    if finalize is not None:
        result = finalize(result, inputs)
    if num_results > 1:  # the N best beams, (B, N, ...)
        for key in HYPOTHESIS_KEYS + ("attention",):
            result[key] = result[f"beam_{key}"][:, :num_results]
    return result


def _check_options(
    max_length, beam_size, length_penalty, coverage_penalty, num_results, drawn
):
    """Checks `decode`'s options (a `ValueError` naming the argument);
    returns the sampler's part of the configuration, `(sampling,
    temperature, top_k, top_p)`, or `None` for an argmax or a beam search
    (no sampling, `"greedy"` or `temperature=0`)."""
    check_positive_int("max_length", max_length)
    check_positive_int("beam_size", beam_size)
    check_non_negative("length_penalty", length_penalty)
    check_non_negative("coverage_penalty", coverage_penalty)
    check_positive_int("num_results", num_results)
    if num_results > beam_size:
        raise ValueError(
            "`num_results` must be at most `beam_size`: the search keeps "
            f"`beam_size` hypotheses. Received: num_results={num_results}, "
            f"beam_size={beam_size}"
        )
    sampling, temperature, top_k, top_p = drawn
    sampling_lib.check_sampling(sampling, temperature, top_k, top_p)
    if sampling is not None and beam_size > 1:
        raise ValueError(
            "`sampling` draws one hypothesis per input: it needs "
            f"`beam_size=1`. Received: sampling={sampling!r}, "
            f"beam_size={beam_size}"
        )
    if sampling in (None, "greedy") or temperature == 0:
        return None  # the argmax: greedy search
    return (sampling, float(temperature), top_k, top_p)


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
            _search_function(adapter, *config[:-1]), jit_compile=config[-1]
        )
    return cache[key]


def _search_function(
    adapter,
    start_id,
    end_id,
    max_length,
    beam_size,
    length_penalty,
    coverage_penalty,
    sampler,
):
    """`(inputs[, seed]) -> dict`: encode, then greedy search, beam search
    or (with `sampler`, taking the seed too) sampling."""

    def search(inputs, seed=None):
        memory = adapter.encode(inputs)
        state = adapter.initial_state(memory)
        ends = (start_id, end_id, max_length)
        if sampler is not None:
            sampling, temperature, top_k, top_p = sampler
            return sampling_lib.sample_search(
                step_function(adapter, memory),
                state,
                *ends,
                sampling=sampling,
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                seed=seed,
            )
        if beam_size == 1:
            return greedy_search(step_function(adapter, memory), state, *ends)
        return beam_search(
            step_function(adapter, tile_beams(memory, beam_size)),
            state,
            *ends,
            beam_size=beam_size,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
        )

    return search
