"""Grouped-query heads and sliding windows of MultiHead: speed and cache.

Three parts, each against the closest Keras built-in or against full
multi-head at the same model width (width 256, 8 query heads of size 32):

- gqa: `MultiHead(num_heads=8, num_key_value_heads=K)` vs
  `keras.layers.GroupQueryAttention(head_dim=32, num_query_heads=8,
  num_key_value_heads=K)` for K = 2 and K = 1; self-attention without a
  mask, batch 32, length 128 (the shapes of `multi_head_bench.py`).
- window: causal `MultiHead(sliding_window=16)` vs
  `keras.layers.MultiHeadAttention` given the same causal band as an
  `attention_mask` (`0 <= i - j < 16`, built inside the compiled
  function), and vs `keras.layers.MultiHeadAttention(sliding_window=16)`
  with `use_causal_mask=True`; same shapes. Only the causal window (the
  decoding case) is timed; the smoke test checks both the causal and the
  two-sided window (`|i - j| < 16`) for equal outputs.

  Both parts run through `harness.compare`: interleaved repeats, medians,
  forward and forward+backward, float32 and mixed_bfloat16, graph and XLA
  on TensorFlow (`jax.jit` on JAX), ratios against the built-in's best
  mode, then same-mode ratios (built-in ms / MultiHead ms). With the same
  weights the candidates give the same outputs (the smoke test checks it).
- cache: one `TransformerDecoderBlock` (width 256, 8 query heads, key_dim
  32, feed-forward 1024) with K = 8 (full multi-head), 2 and 1 key/value
  heads. The block has no decoder-only mode, so it cross-attends to a
  short fixed encoder memory (16 steps) whose keys and values are
  projected once (`compute_cross_attention_cache`; that cache has K heads
  too, but only the self-attention cache, which grows with the generated
  length, is reported). (a) Cache size: the bytes of the self-attention
  cache that `get_initial_cache` allocates (and the compiled loop
  carries), divided by batch * positions, i.e. bytes per token per
  layer, beside the formula `2 * K * key_dim * bytes per element`, for
  float32 and mixed_bfloat16 (the cache is in the
  compute dtype); also the cache of a 2,048-token context in MiB.
  (b) Decode speed: 128 steps, each step's output fed back as the next
  input, the whole loop one compiled function (`keras.ops.fori_loop` over
  `block(..., self_attention_cache=..., cache_update_index=i)`), batch 8
  and batch 1; medians of interleaved repeats in ms per token, and the
  speed-up over K = 8 compiled the same way.

Run from the repository root:

    python -m benchmarks.grouped_query_bench [--repeats N]
        [--only {gqa,window,cache}] [--small] [--out DIR]
    KERAS_BACKEND=jax python -m benchmarks.grouped_query_bench

`--small` uses tiny shapes, 2 repeats and float32 only (for the smoke
test).
"""

import keras
import numpy as np
from keras import ops

from attention_zoo.blocks import TransformerDecoderBlock
from attention_zoo.layers import MultiHead
from benchmarks import harness
from benchmarks.harness import BACKEND
from benchmarks.harness import compare
from benchmarks.harness import median_times
from benchmarks.harness import random_inputs
from benchmarks.harness import same_mode_ratios

FULL = {
    "batch": 32,
    "length": 128,
    "width": 256,
    "heads": 8,
    "key_dim": 32,
    "window": 16,
    "feed_forward": 1024,
    "steps": 128,
    "decode_batches": (8, 1),
    "memory": 16,
    "long_context": 2048,
}
SMALL = {
    "batch": 2,
    "length": 8,
    "width": 16,
    "heads": 8,
    "key_dim": 2,
    "window": 3,
    "feed_forward": 32,
    "steps": 8,
    "decode_batches": (2, 1),
    "memory": 4,
    "long_context": 64,
}
GQA_KV_HEADS = (2, 1)
CACHE_KV_HEADS = (8, 2, 1)  # 8 = full multi-head with 8 query heads
POLICIES = ("float32", "mixed_bfloat16")
ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def copy_weights(source, target):
    """Gives a built Keras attention layer the weights of a `MultiHead`.

    Keras's `GroupQueryAttention` and `MultiHeadAttention` keep each
    projection in an `EinsumDense` (`query/kernel`, ...,
    `attention_output/bias`) with the shapes of `MultiHead`'s
    `query_kernel`, ..., `output_bias`, so the weights are matched by name.
    """
    ours = {w.path.split("/")[-1]: w for w in source.weights}
    values = []
    for w in target.weights:
        name = f"{w.path.split('/')[-2]}_{w.name}".replace("attention_", "")
        values.append(ops.convert_to_numpy(ours[name]))
    target.set_weights(values)


def band_mask(query_length, value_length, window, causal):
    """Boolean `(Tq, Tv)`: `|p_i - j| < window` (and `j <= p_i` if causal).

    Query `i` sits at `p_i = Tv - Tq + i`, as in `MultiHead`.
    """
    row = ops.expand_dims(ops.arange(query_length), -1)
    col = ops.expand_dims(ops.arange(value_length), 0)
    distance = row + (value_length - query_length) - col
    mask = ops.abs(distance) < window
    return mask & (distance >= 0) if causal else mask


class Windowed(keras.layers.Layer):
    """Calls an attention layer on `(query, value)`, for `compare`.

    With `band`, the layer gets that band as an explicit `attention_mask`
    `(B, Tq, Tv)`; otherwise `use_causal_mask=causal` (its own window, if
    it has one, does the rest).
    """

    def __init__(self, attention, causal, band=None, **kwargs):
        super().__init__(**kwargs)
        self.attention = attention
        self.causal = causal
        self.band = band

    def call(self, query, value):
        if self.band is None:
            return self.attention(query, value, use_causal_mask=self.causal)
        batch, length = ops.shape(query)[0], ops.shape(query)[1]
        mask = band_mask(length, ops.shape(value)[1], self.band, self.causal)
        mask = ops.broadcast_to(mask, (batch, length, ops.shape(value)[1]))
        return self.attention(query, value, attention_mask=mask)


def gqa_candidates(shape, kv_heads):
    """name -> `make(policy)`: Keras's GroupQueryAttention, then ours."""
    heads, key_dim = shape["heads"], shape["key_dim"]
    return {
        "keras.GroupQueryAttention": lambda policy: (
            keras.layers.GroupQueryAttention(
                head_dim=key_dim,
                num_query_heads=heads,
                num_key_value_heads=kv_heads,
                dtype=policy,
            )
        ),
        "MultiHead": lambda policy: MultiHead(
            heads, key_dim, num_key_value_heads=kv_heads, dtype=policy
        ),
    }


def window_candidates(shape, causal=True):
    """name -> `make(policy)`: Keras with a band mask, Keras's own, ours."""
    heads, key_dim, window = shape["heads"], shape["key_dim"], shape["window"]

    def keras_band(policy):
        mha = keras.layers.MultiHeadAttention(heads, key_dim, dtype=policy)
        return Windowed(mha, causal, band=window, dtype=policy)

    def keras_window(policy):
        mha = keras.layers.MultiHeadAttention(
            heads, key_dim, sliding_window=window, dtype=policy
        )
        return Windowed(mha, causal, dtype=policy)

    def ours(policy):
        layer = MultiHead(heads, key_dim, sliding_window=window, dtype=policy)
        return Windowed(layer, causal, dtype=policy)

    return {
        "keras.MHA+band mask": keras_band,
        "keras.MHA(sliding_window)": keras_window,
        "MultiHead(sliding_window)": ours,
    }


def run_gqa(shape, repeats, policies):
    inputs = random_inputs(
        {
            "query": (shape["batch"], shape["length"], shape["width"]),
            "value": (shape["batch"], shape["length"], shape["width"]),
        }
    )
    rows = []
    for kv_heads in GQA_KV_HEADS:
        title = (
            f"Grouped-query self-attention K={kv_heads} B={shape['batch']} "
            f"T={shape['length']} d={shape['width']} H={shape['heads']} "
            f"Dk={shape['key_dim']}"
        )
        part = compare(
            title,
            gqa_candidates(shape, kv_heads),
            inputs,
            baseline="keras.GroupQueryAttention",
            policies=policies,
            repeats=repeats,
        )
        same_mode_ratios(part, "keras.GroupQueryAttention")
        rows += [dict(r, kv_heads=kv_heads) for r in part]
    return rows


def run_window(shape, repeats, policies):
    inputs = random_inputs(
        {
            "query": (shape["batch"], shape["length"], shape["width"]),
            "value": (shape["batch"], shape["length"], shape["width"]),
        }
    )
    rows = compare(
        f"Causal sliding window W={shape['window']} B={shape['batch']} "
        f"T={shape['length']} d={shape['width']} H={shape['heads']} "
        f"Dk={shape['key_dim']}",
        window_candidates(shape, causal=True),
        inputs,
        baseline="keras.MHA+band mask",
        policies=policies,
        repeats=repeats,
    )
    same_mode_ratios(rows, "keras.MHA+band mask")
    return rows


def make_block(shape, kv_heads, policy, seed=0):
    """A built `TransformerDecoderBlock` with `kv_heads` key/value heads."""
    keras.utils.set_random_seed(seed)
    block = TransformerDecoderBlock(
        shape["heads"],
        shape["key_dim"],
        shape["feed_forward"],
        num_key_value_heads=kv_heads,
        dtype=policy,
    )
    block.build((None, None, shape["width"]), (None, None, shape["width"]))
    return block


def nbytes(tensor):
    """Bytes of a tensor's data, as allocated (from its NumPy copy)."""
    return ops.convert_to_numpy(tensor).nbytes


def cache_size(block, batch, length):
    """Measured self-attention cache of `block`, and the formula's value.

    Returns:
        dict with the cache's shape and dtype, its total bytes, bytes per
        token (per batch row and position) and `2 * K * Dk * itemsize`.
    """
    cache = block.get_initial_cache(batch, length)
    total = nbytes(cache)
    kv_heads = block.num_key_value_heads or block.num_heads
    dtype = keras.backend.standardize_dtype(cache.dtype)
    return {
        "shape": tuple(cache.shape),
        "dtype": dtype,
        "bytes": total,
        "per_token": total / (batch * length),
        "formula": 2 * kv_heads * block.key_dim * ELEMENT_BYTES[dtype],
    }


def decode_inputs(block, shape, batch, seed=0):
    """First input `(B, 1, D)`, encoder memory, its cache, an empty cache."""
    rng = np.random.default_rng(seed)
    width = shape["width"]
    x0 = ops.cast(
        rng.standard_normal((batch, 1, width)).astype("float32"),
        block.compute_dtype,
    )
    memory = ops.convert_to_tensor(
        rng.standard_normal((batch, shape["memory"], width)).astype("float32")
    )
    cross = block.compute_cross_attention_cache(memory)
    return x0, memory, cross, block.get_initial_cache(batch, shape["steps"])


def make_decoder(block, shape, batch, mode, seed=0):
    """A compiled `steps`-step cached decoding loop of `block`.

    Step `i` writes position `i` of the self-attention cache; its output
    is the next step's input. Returns a callable giving the last output
    `(B, 1, D)` and the filled cache `(B, 2, steps, K, Dk)`.
    """
    steps = shape["steps"]
    x0, memory, cross, cache = decode_inputs(block, shape, batch, seed)

    def loop(step, x, cache):
        return ops.fori_loop(
            0, steps, lambda i, carry: step(i, *carry), (x, cache)
        )

    if BACKEND == "tensorflow":

        def generate(x, memory, cross, cache):
            def step(i, x, cache):
                return block(
                    x,
                    memory,
                    self_attention_cache=cache,
                    cross_attention_cache=cross,
                    cache_update_index=i,
                )

            return loop(step, x, cache)

        fn = harness.compiled(generate, mode, autograph=False)
        return lambda: fn(x0, memory, cross, cache)

    trainable = [v.value for v in block.trainable_variables]
    non_trainable = [v.value for v in block.non_trainable_variables]

    # Weights are arguments (as in `harness`): XLA would otherwise fold
    # weight-only work as constants.
    def generate(trainable, non_trainable, x, memory, cross, cache):
        def step(i, x, cache):
            outputs, _ = block.stateless_call(
                trainable,
                non_trainable,
                x,
                memory,
                self_attention_cache=cache,
                cross_attention_cache=cross,
                cache_update_index=i,
            )
            return outputs

        return loop(step, x, cache)

    jitted = harness.compiled(generate)
    return lambda: jitted(trainable, non_trainable, x0, memory, cross, cache)


def blocking(decoder):
    """A no-argument runner that waits for the decoder's result."""

    def run():
        x, _ = decoder()
        ops.convert_to_numpy(ops.sum(ops.cast(x, "float32")))

    return run


def print_cache_sizes(shape, policies):
    print(
        f"\n## Self-attention key/value cache per decoder layer "
        f"(TransformerDecoderBlock, d={shape['width']} H={shape['heads']} "
        f"Dk={shape['key_dim']}, backend={BACKEND})"
    )
    long = shape["long_context"]
    print(
        f"{'policy':<16}{'K':>3}{'cache shape':>24}{'dtype':>10}"
        f"{'B/token':>9}{'formula':>9}{'vs K=8':>8}"
        + "".join(
            f"{f'MiB B={b} T={long}':>20}" for b in shape["decode_batches"]
        )
    )
    sizes = {}
    for policy in policies:
        for kv_heads in CACHE_KV_HEADS:
            block = make_block(shape, kv_heads, policy)
            size = cache_size(block, shape["decode_batches"][0], shape["steps"])
            size["long_mib"] = {
                b: cache_size(block, b, long)["bytes"] / 2**20
                for b in shape["decode_batches"]
            }
            sizes[(policy, kv_heads)] = size
            full = sizes[(policy, CACHE_KV_HEADS[0])]["per_token"]
            print(
                f"{policy:<16}{kv_heads:>3}{str(size['shape']):>24}"
                f"{size['dtype']:>10}{size['per_token']:>9.0f}"
                f"{size['formula']:>9}{size['per_token'] / full:>8.3f}"
                + "".join(f"{m:>20.2f}" for m in size["long_mib"].values())
            )
    return sizes


def run_cache(shape, repeats, policies):
    sizes = print_cache_sizes(shape, policies)
    modes = ("graph", "xla") if BACKEND == "tensorflow" else ("xla",)
    steps = shape["steps"]
    print(
        f"\n## Cached decoding, {steps} steps in one compiled loop "
        f"(TransformerDecoderBlock + {shape['memory']}-step encoder memory, "
        f"backend={BACKEND}, median of {repeats})"
    )
    print(
        f"{'policy':<16}{'batch':>6}{'K':>3}  {'mode':<7}{'ms/token':>10}"
        f"{'ms/loop':>10}{'params':>9}{'vs K=8':>8}"
    )
    rows = []
    for policy in policies:
        blocks = {k: make_block(shape, k, policy) for k in CACHE_KV_HEADS}
        for batch in shape["decode_batches"]:
            decoders = {
                (k, mode): make_decoder(blocks[k], shape, batch, mode)
                for k in CACHE_KV_HEADS
                for mode in modes
            }
            for (k, _), decoder in decoders.items():
                # The compiled loop carries the cache it was given.
                _, cache = decoder()
                expected = cache_size(blocks[k], batch, steps)
                if nbytes(cache) != expected["bytes"]:
                    raise AssertionError("the loop's cache changed size")
            runners = {key: blocking(d) for key, d in decoders.items()}
            times = median_times(runners, repeats=repeats, warmup=2)
            for (k, mode), t in times.items():
                full = times[(CACHE_KV_HEADS[0], mode)]
                row = {
                    "policy": policy,
                    "batch": batch,
                    "kv_heads": k,
                    "mode": mode,
                    "ms_per_token": 1e3 * t / steps,
                    "ms": 1e3 * t,
                    "params": blocks[k].count_params(),
                    "speedup": full / t,
                    "cache_bytes_per_token": sizes[(policy, k)]["per_token"],
                }
                rows.append(row)
                print(
                    f"{policy:<16}{batch:>6}{k:>3}  {mode:<7}"
                    f"{row['ms_per_token']:>10.3f}{row['ms']:>10.2f}"
                    f"{row['params']:>9}{row['speedup']:>7.2f}x"
                )
    return {"sizes": sizes, "decode": rows}


def main(argv=None):
    parser = harness.parser(__doc__, repeats=15)
    parser.add_argument("--only", choices=("gqa", "window", "cache"))
    parser.add_argument(
        "--small",
        action="store_true",
        help="tiny shapes, 2 repeats, float32 only (smoke test)",
    )
    return harness.run(__file__, parser, measure, argv)


def measure(args):
    """Each part's results run (`--only`), by name."""
    shape, repeats, policies = FULL, args.repeats, POLICIES
    if args.small:
        shape, repeats, policies = SMALL, 2, ("float32",)
    parts = {"gqa": run_gqa, "window": run_window, "cache": run_cache}
    return {
        name: run(shape, repeats, policies)
        for name, run in parts.items()
        if args.only in (None, name)
    }


if __name__ == "__main__":
    main()
