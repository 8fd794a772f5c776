"""Greedy decoding of an attention GRU decoder: Python loops vs one loop.

Run from the repository root (TensorFlow backend):

    python -m benchmarks.greedy_decoding_bench [--out DIR]

A Bahdanau decoder (target vocabulary 8,000, embedding 256, `GRUCell(512)`,
`AdditiveAttention(512)` over encoder states `(64, 20, 512)`, a `Dense`
logits layer) generates 20 tokens greedily for a batch of 64, five ways:

- (a) eager: the tutorial loop, one eager decoder step per token, the
  attention layer called as `layer(query, value)` (keys re-projected at
  every step);
- (b) step fn: the same Python loop, each step a `tf.function`;
- (c) loop fn: the whole Python loop (unrolled, 20 steps) in one
  `tf.function`, still re-projecting the keys at every step;
- (d) ours XLA: `greedy_search` compiled whole with `jit_compile=True`,
  keys projected once with `precompute_keys` and used by `attend`;
- (e) ours graph: (d) without XLA;
- (f), (g): (d) and (e) with the decoder under `mixed_bfloat16` (the same
  weights; matmuls in bfloat16, softmax and logits in float32), with
  `--bfloat16`.

No END token is used, so every variant runs exactly 20 steps. Figures are
medians in ms per batch of 64 (20 tokens), measured interleaved.
"""

import os
import statistics

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import ops  # noqa: E402

from attention_zoo import AdditiveAttention  # noqa: E402
from attention_zoo.decoding import greedy_search  # noqa: E402
from benchmarks import harness  # noqa: E402

START = 2
NEVER = -1  # no END: every variant decodes the same number of steps


class Decoder:
    """Embedding -> Bahdanau attention on `h` -> GRU cell -> logits."""

    def __init__(self, vocabulary_size, embedding_dim, units, source_width):
        self.embedding = keras.layers.Embedding(vocabulary_size, embedding_dim)
        self.attention = AdditiveAttention(units)
        self.cell = keras.layers.GRUCell(units)
        self.logits = keras.layers.Dense(vocabulary_size, dtype="float32")
        self.embedding.build((None,))
        self.attention.build((None, units), (None, None, source_width))
        self.cell.build((None, embedding_dim + source_width))
        self.logits.build((None, units))

    def step(self, token_ids, h, encoder_states):
        """The tutorial step: `layer(query, value)` re-projects the keys."""
        context, weights = self.attention(
            h, encoder_states, return_attention_scores=True
        )  # (B, D), (B, Ts)
        return self._rest(token_ids, h, context, weights)

    def fast_step(self, token_ids, h, keys, encoder_states):
        """Same step with keys projected once (`precompute_keys`)."""
        context, weights = self.attention.attend(
            h, keys, encoder_states, return_attention_scores=True
        )
        return self._rest(token_ids, h, context, weights)

    def _rest(self, token_ids, h, context, weights):
        x = ops.concatenate([self.embedding(token_ids), context], axis=-1)
        h, _ = self.cell(x, [h])
        return self.logits(h), h, weights


def python_loop(decoder, step, encoder_states, h, max_length):
    """The tutorial loop: greedy tokens `(B, L)` and attention `(B, L, Ts)`."""
    batch_size = encoder_states.shape[0]
    token_ids = tf.fill((batch_size,), START)
    tokens, weights = [], []
    for _ in range(max_length):
        logits, h, w = step(token_ids, h, encoder_states)
        token_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        tokens.append(token_ids)
        weights.append(w)
    return tf.stack(tokens, axis=1), tf.stack(weights, axis=1)


def ours(decoder, encoder_states, h, max_length):
    keys = decoder.attention.precompute_keys(encoder_states)  # (B, Ts, U)

    def step_fn(token_ids, state, index):
        logits, state, weights = decoder.fast_step(
            token_ids, state, keys, encoder_states
        )
        return logits, state, weights

    out = greedy_search(step_fn, h, START, NEVER, max_length)
    return out["tokens"], out["attention"]


def bfloat16_copy(decoder, vocabulary_size):
    """The decoder rebuilt under `mixed_bfloat16` with the same weights."""
    previous = keras.config.dtype_policy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        copy = Decoder(vocabulary_size, 256, 512, 512)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    for name in ("embedding", "attention", "cell", "logits"):
        getattr(copy, name).set_weights(getattr(decoder, name).get_weights())
    return copy


def main(argv=None):
    parser = harness.parser(__doc__, repeats=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=20)
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument(
        "--vocabulary-size",
        "--vocab-size",  # the flag's former name, kept as an alias
        dest="vocabulary_size",
        type=int,
        default=8000,
    )
    parser.add_argument(
        "--bfloat16",
        action="store_true",
        help="also time greedy_search with the decoder in mixed_bfloat16",
    )
    return harness.run(__file__, parser, measure, argv)


def measure(args):
    """Each variant's median seconds per batch, by name."""
    if keras.backend.backend() != "tensorflow":
        raise SystemExit("Run with the TensorFlow backend.")

    keras.utils.set_random_seed(0)
    decoder = Decoder(args.vocabulary_size, 256, 512, 512)
    rng = np.random.default_rng(0)
    encoder_states = tf.constant(
        rng.normal(size=(args.batch_size, args.source_length, 512)),
        tf.float32,
    )
    h = tf.constant(rng.normal(size=(args.batch_size, 512)), tf.float32)
    length = args.max_length

    step_fn = harness.compiled(decoder.step, "graph")
    loop_fn = harness.compiled(
        lambda e, h: python_loop(decoder, decoder.step, e, h, length), "graph"
    )
    ours_xla = harness.compiled(lambda e, h: ours(decoder, e, h, length))
    ours_graph = harness.compiled(
        lambda e, h: ours(decoder, e, h, length), "graph"
    )
    candidates = {
        "(a) eager Python loop": lambda e, h: python_loop(
            decoder, decoder.step, e, h, length
        ),
        "(b) Python loop, tf.function step": lambda e, h: python_loop(
            decoder, step_fn, e, h, length
        ),
        "(c) tf.function around the loop": loop_fn,
        "(d) greedy_search, XLA, keys once": ours_xla,
        "(e) greedy_search, graph, keys once": ours_graph,
    }
    if args.bfloat16:
        half = bfloat16_copy(decoder, args.vocabulary_size)

        def ours_half(e, h):
            # bfloat16 states, so the loop's state keeps one dtype.
            e, h = tf.cast(e, tf.bfloat16), tf.cast(h, tf.bfloat16)
            return ours(half, e, h, length)

        candidates["(f) greedy_search, XLA, bfloat16"] = harness.compiled(
            ours_half
        )
        candidates["(g) greedy_search, graph, bfloat16"] = harness.compiled(
            ours_half, "graph"
        )

    # Warm up (trace and compile) and check every variant agrees with (a).
    reference = None
    for name, fn in candidates.items():
        tokens, weights = fn(encoder_states, h)
        tokens = tokens.numpy()
        if reference is None:
            reference = tokens, weights.numpy()
        agree = (tokens == reference[0]).mean()
        error = np.abs(weights.numpy() - reference[1]).max()
        print(f"{name}: tokens agree with (a): {agree:.4f}, ", end="")
        print(f"max attention difference {error:.1e}")

    def runner(fn):
        return lambda: fn(encoder_states, h)[0].numpy()

    times = harness.interleaved_samples(
        {name: runner(fn) for name, fn in candidates.items()}, args.repeats
    )
    medians = {name: statistics.median(s) for name, s in times.items()}
    baseline = medians["(a) eager Python loop"]
    print()
    print(
        f"Greedy decoding, batch {args.batch_size}, {length} tokens, "
        f"vocabulary {args.vocabulary_size}, GRU 512, source length "
        f"{args.source_length}; medians of {args.repeats}."
    )
    print()
    print("| variant | ms per batch | speed-up vs (a) |")
    print("| --- | ---: | ---: |")
    for name, median in medians.items():
        print(f"| {name} | {1e3 * median:.1f} | {baseline / median:.1f}x |")
    return medians


if __name__ == "__main__":
    main()
