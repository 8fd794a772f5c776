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

from attention_zoo import buckets
from attention_zoo.checks import check_positive_int
from attention_zoo.decoding import sampling as sampling_lib
from attention_zoo.decoding import searches
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
    search=None,
    *,
    start_id,
    end_id,
    max_length,
    seed=None,
    jit_compile=True,
    **options,
):
    """Generates token sequences from `inputs` with the model `adapter`.

    `search` is a `Greedy()` (the default), a `BeamSearch` or a
    `Sampling` (see `attention_zoo.decoding.searches`), or a name of one
    (`"greedy"`, `"beam"`, `"top_k"`, `"top_p"`, ...). Greedy search is
    `greedy_search`; a beam search is `beam_search` with `beam_size` beams
    (the memory tiled with `tile_beams`) ranked by the GNMT length and
    coverage penalties, of which the `num_results` best come back;
    sampling is `sample_search`. Before the
    search, `inputs` are padded with zeros (PAD) to a bucket: the batch to
    a power of two, or a multiple of 64 past 64, and the length axis of
    int inputs to a multiple of `adapter.length_multiple` if it sets one
    (see `DecodingAdapter`). The results are cut back to the caller's
    batch (and source length), then passed through
    `adapter.finalize(result, inputs)`.

    The search is compiled whole (`encode` included, unless the adapter
    sets `compile_encode = False`), once per configuration (the search's
    `canonical()` form, the ids, `max_length` and `jit_compile`) and
    bucket (padded shapes and dtypes), with the active
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
        search: a search, a name of one, or `None` (greedy search, or
            the search `options` describe). Defaults to `None`.
        start_id: int, the token fed at the first step.
        end_id: int, the token that finishes a sequence.
        max_length: int >= 1, the number of steps `L`.
        seed: with sampling, every row's seed: an int or int scalar
            tensor (row `i` gets `seed + i`), an int tensor `(B,)` (one
            seed per row), or `None` (a new int per call, or per trace
            inside an outer compiled function). A row's draws depend on
            its seed and inputs only, not on the rest of the batch or the
            padding (see `sample_search`). Defaults to `None`.
        jit_compile: bool, compile with XLA (on TensorFlow `False` gives a
            graph function, on JAX op-by-op execution). Defaults to `True`.
        **options: the search as loose keyword arguments instead of
            `search` (aliases; not both, else a `ValueError`):
            `beam_size` (int >= 1, 1 is greedy; `BeamSearch`'s),
            `length_penalty` (float >= 0, `alpha`, default 0),
            `coverage_penalty` (float >= 0, `beta`, default 0),
            `num_results` (int in `[1, beam_size]`, default 1),
            `sampling` (`None`, or `"temperature"`, `"top_k"`, `"top_p"`,
            `"greedy"`: `Sampling`'s `strategy`, with `beam_size=1`),
            `temperature` (float >= 0, 0 is greedy, default 1), `top_k`
            (int >= 1, with `"top_k"`) and `top_p` (float in `(0, 1]`,
            with `"top_p"`). `decode(..., beam_size=4, length_penalty=0.6)`
            is `decode(..., search=BeamSearch(4, 0.6))`.

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
    result = decode(adapter, source_ids, BeamSearch(4, length_penalty=0.6),
                    start_id=2, end_id=3, max_length=50)
    result["tokens"]  # (B, 50)
    ```
    """
    check_positive_int("max_length", max_length)
    search = searches.DEFAULTS.resolve(search, **options)
    compiled = search.canonical()
    inputs = keras.tree.map_structure(ops.convert_to_tensor, inputs)
    padded, batch, length = _pad_inputs(
        inputs, getattr(adapter, "length_multiple", None)
    )
    config = (
        int(start_id),
        int(end_id),
        max_length,
        compiled,
        bool(jit_compile),
    )
    bucket = tuple(
        (tuple(x.shape), keras.backend.standardize_dtype(x.dtype))
        for x in keras.tree.flatten(padded)
    )
    run = _compiled_search(adapter, config, bucket)
    if not isinstance(compiled, searches.Sampling):
        result = run(padded)
    else:
        # The rows' seeds, padded with the batch (see `row_seeds`).
        seeds = sampling_lib.row_seeds(seed, batch)
        padded_batch = ops.shape(keras.tree.flatten(padded)[0])[0]
        result = run(padded, buckets.pad_axes(seeds, [padded_batch]))
    result = {key: buckets.unpad(value, batch) for key, value in result.items()}
    for key in ("attention", "beam_attention"):
        if length is not None and key in result:  # (..., Ts) cut back
            result[key] = buckets.unpad(result[key], batch, length)
    finalize = getattr(adapter, "finalize", None)
    if finalize is not None:
        result = finalize(result, inputs)
    if search.num_results > 1:  # the N best beams, (B, N, ...)
        for key in HYPOTHESIS_KEYS + ("attention",):
            result[key] = result[f"beam_{key}"][:, : search.num_results]
    return result


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
        *ends, jit_compile = config
        if jit_compile and not _compiles_encode(adapter):
            cache[key] = _encode_then_search(
                compile_function(_encode_function(adapter), jit_compile=False),
                compile_function(
                    _search_function(adapter, *ends, encoded=True),
                    jit_compile=True,
                ),
            )
        else:
            cache[key] = compile_function(
                _search_function(adapter, *ends), jit_compile=jit_compile
            )
    return cache[key]


def _compiles_encode(adapter):
    """Whether an XLA-compiled search compiles `adapter.encode` with it
    (its `compile_encode`; always on JAX, which runs every op with XLA)."""
    return (
        getattr(adapter, "compile_encode", True)
        or keras.backend.backend() != "tensorflow"
    )


def _encode_function(adapter):
    """`adapter.encode` as a new closure (one per compiled entry, as the
    searches: TF counts traces per Python function)."""

    def encode(inputs):
        return adapter.encode(inputs)

    return encode


def _encode_then_search(encode, search):
    """`(inputs[, seed]) -> dict`: `encode` (a graph function), then
    `search` (XLA-compiled) from its memory."""

    def run(inputs, seed=None):
        memory = encode(inputs)
        return search(memory) if seed is None else search(memory, seed)

    return run


def _search_function(
    adapter, start_id, end_id, max_length, search, encoded=False
):
    """`(inputs[, seed]) -> dict`: encode (unless `encoded`: the inputs
    are the memory), then greedy search, beam search or (a `Sampling`,
    taking the seed too) sampling."""

    def run(inputs, seed=None):
        memory = inputs if encoded else adapter.encode(inputs)
        state = adapter.initial_state(memory)
        ends = (start_id, end_id, max_length)
        if isinstance(search, searches.Sampling):
            return sampling_lib.sample_search(
                step_function(adapter, memory),
                state,
                *ends,
                sampling=search.strategy,
                temperature=search.temperature,
                top_k=search.top_k,
                top_p=search.top_p,
                seed=seed,
            )
        if isinstance(search, searches.Greedy):
            return greedy_search(step_function(adapter, memory), state, *ends)
        return beam_search(
            step_function(adapter, tile_beams(memory, search.beam_size)),
            state,
            *ends,
            beam_size=search.beam_size,
            length_penalty=search.length_penalty,
            coverage_penalty=search.coverage_penalty,
        )

    return run
