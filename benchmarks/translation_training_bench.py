"""Training throughput of the RNN translator: ours vs Keras built-ins.

Run from the repository root (TensorFlow backend):

    python -m benchmarks.translation_training_bench [--out DIR]
    python -m benchmarks.translation_training_bench --quick   # smoke test

Two models of the same architecture and parameter count are trained on the
same random token batches with `model.train_on_batch` (Adam, masked sparse
cross-entropy):

- ours: `build_rnn_translator(8000, 8000, attention="additive", cell="gru",
  embedding_dim=256, units=512, bidirectional=True)`: the Bahdanau
  attention is `attention_zoo.AdditiveAttention(512)`, which owns its
  projections and computes the `(B, Tt, Ts, U)` tanh in float32;
- built-in: the same graph from Keras layers only (the TensorFlow NMT
  tutorial's Bahdanau): `Embedding`, `Bidirectional(GRU)`, a `Dense` tanh
  bridge, a `GRU` decoder, `Dense` query (no bias) and key (with bias, the
  `b` of ours) projections, `keras.layers.AdditiveAttention` (its `scale`
  is our `v`), `Concatenate`, `Dense` tanh, `Dropout`, `Dense` logits.

Batches: 64 sentences, source and target length 20, real lengths drawn in
[10, 20] and the rest padded with id 0. Throughput is real (non-padding)
target tokens per second, from the median step time over the timed steps
after warm-up. Candidates and modes (graph: `jit_compile=False`; xla:
`jit_compile=True`) are timed interleaved (A, B, A, B, ...) by
`harness.median_times`; the ratio is ours / built-in per mode.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from attention_zoo_apps.translation.rnn_model import build_rnn_translator  # noqa: E402,E501
from benchmarks import harness  # noqa: E402


def build_builtin_translator(
    source_vocabulary_size,
    target_vocabulary_size,
    embedding_dim=256,
    units=512,
    dropout=0.1,
    dtype=None,
):
    """The same GRU + Bahdanau translator from Keras built-in layers only.

    Same inputs, outputs and weights (shapes and count) as
    `build_rnn_translator(..., attention="additive", cell="gru",
    bidirectional=True, encoder_layers=1)`.
    """
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    target_in = keras.Input(shape=(None,), dtype="int32", name="target_in")
    source_mask = ops.not_equal(source, 0)  # (B, Ts)
    target_mask = ops.not_equal(target_in, 0)  # (B, Tt)

    x = keras.layers.Embedding(
        source_vocabulary_size, embedding_dim, mask_zero=True, dtype=dtype
    )(source)
    encoder_outputs, forward_h, backward_h = keras.layers.Bidirectional(
        keras.layers.GRU(
            units, return_sequences=True, return_state=True, dtype=dtype
        ),
        dtype=dtype,
    )(x)  # (B, Ts, 2U), (B, U), (B, U)
    final = keras.layers.Concatenate(dtype=dtype)([forward_h, backward_h])
    initial_h = keras.layers.Dense(units, activation="tanh", dtype=dtype)(final)

    y = keras.layers.Embedding(
        target_vocabulary_size, embedding_dim, mask_zero=True, dtype=dtype
    )(target_in)
    states = keras.layers.GRU(units, return_sequences=True, dtype=dtype)(
        y, initial_state=[initial_h]
    )  # (B, Tt, U)

    # Bahdanau: v^T tanh(W_q s_t + W_k h_j + b), v = the layer's `scale`.
    query = keras.layers.Dense(units, use_bias=False, dtype=dtype)(states)
    key = keras.layers.Dense(units, dtype=dtype)(encoder_outputs)
    context = keras.layers.AdditiveAttention(dtype=dtype)(
        [query, encoder_outputs, key], mask=[target_mask, source_mask]
    )  # (B, Tt, 2U)
    features = keras.layers.Concatenate(dtype=dtype)([context, states])
    features = keras.layers.Dense(units, activation="tanh", dtype=dtype)(
        features
    )
    features = keras.layers.Dropout(dropout, dtype=dtype)(features)
    logits = keras.layers.Dense(target_vocabulary_size, dtype="float32")(
        features
    )
    return keras.Model(
        {"source": source, "target_in": target_in},
        logits,
        name="builtin_translator",
    )


def random_batch(batch_size, length, vocabulary_size, seed=0):
    """Token ids `(B, T)` with real lengths in `[T // 2, T]`, 0-padded."""
    rng = np.random.default_rng(seed)

    def ids():
        tokens = rng.integers(4, vocabulary_size, (batch_size, length))
        lengths = rng.integers(length // 2, length + 1, (batch_size, 1))
        return np.where(np.arange(length) < lengths, tokens, 0).astype("int32")

    source, target = ids(), ids()
    target_in = target.copy()
    target_in[:, 1:] = target[:, :-1]
    target_in[:, 0] = np.where(target[:, 0] > 0, 2, 0)  # START
    return {"source": source, "target_in": target_in}, target


def compiled(model, jit_compile):
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3, clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=0
        ),
        jit_compile=jit_compile,
    )
    return model


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--embedding-dim", type=int, default=256)
    parser.add_argument("--units", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--policies",
        default="float32,mixed_bfloat16",
        help="comma-separated dtype policies",
    )
    parser.add_argument("--modes", default="graph,xla")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes for a smoke test (under a minute)",
    )
    return harness.run(__file__, parser, measure, argv)


def measure(args):
    """A record per policy and mode: tokens per second of ours and of the
    built-in model, and their ratio."""
    if args.quick:
        args.vocab, args.embedding_dim, args.units = 300, 16, 32
        args.batch, args.length, args.steps, args.warmup = 8, 8, 3, 1
    policies = args.policies.split(",")
    modes = args.modes.split(",")

    inputs, target = random_batch(args.batch, args.length, args.vocab)
    tokens = int(np.count_nonzero(target))
    sizes = dict(embedding_dim=args.embedding_dim, units=args.units)
    builders = {
        "ours": lambda dtype: build_rnn_translator(
            args.vocab,
            args.vocab,
            attention="additive",
            cell="gru",
            bidirectional=True,
            dtype=dtype,
            **sizes,
        ),
        "built-in": lambda dtype: build_builtin_translator(
            args.vocab, args.vocab, dtype=dtype, **sizes
        ),
    }
    counts = {
        name: build(None).count_params() for name, build in builders.items()
    }
    print(
        f"vocab {args.vocab}, embedding {args.embedding_dim}, units "
        f"{args.units}, bidirectional GRU, additive attention; batch "
        f"{args.batch} x length {args.length} ({tokens} real target tokens);"
        f" median of {args.steps} steps after {args.warmup} warm-up"
    )
    print(
        "parameters: "
        + ", ".join(f"{name} {count:,}" for name, count in counts.items())
        + ("  (equal)" if len(set(counts.values())) == 1 else "  (DIFFERENT!)")
    )

    rows = []
    for policy in policies:
        runners = {}
        for mode in modes:
            for name, build in builders.items():
                keras.utils.set_random_seed(0)
                model = compiled(build(policy), jit_compile=(mode == "xla"))

                def run(model=model):
                    model.train_on_batch(inputs, target)

                runners[(name, mode)] = run
        times = harness.median_times(runners, args.steps, args.warmup)
        for mode in modes:
            ours, builtin = times[("ours", mode)], times[("built-in", mode)]
            rows.append(
                {
                    "policy": policy,
                    "mode": mode,
                    "ours tokens/s": tokens / ours,
                    "built-in tokens/s": tokens / builtin,
                    "speed-up (ours/built-in)": builtin / ours,
                }
            )

    print(
        f"\n{'policy':<16}{'mode':<7}{'ours tok/s':>12}{'built-in tok/s':>16}"
        f"{'ours/built-in':>15}"
    )
    for row in rows:
        print(
            f"{row['policy']:<16}{row['mode']:<7}"
            f"{row['ours tokens/s']:>12,.0f}{row['built-in tokens/s']:>16,.0f}"
            f"{row['speed-up (ours/built-in)']:>14.2f}x"
        )
    return rows


if __name__ == "__main__":
    main()
