"""Training throughput of the applications: JAX backend vs TensorFlow.

Run from the repository root (about 9 minutes on 2 CPU cores):

    python -m benchmarks.jax_training_throughput [--out DIR]
    python -m benchmarks.jax_training_throughput --apps ehr entailment
    python -m benchmarks.jax_training_throughput --rounds 1 --steps 10

Keras fixes its backend at import, so every measurement is a child
process (this module again, with `--child APP` and `KERAS_BACKEND` set).
Each child builds the application's bundle from its `tiny_config()` with
the sizes of `SETTINGS` (the same config on both backends), learns the
vocabularies from `--batches` batches of generated data and compiles the
model the way `fit` does (`ensure_model`, so each backend keeps the
`jit_compile` the bundle compiles with: `"auto"`, which is plain graph
mode for TensorFlow on a CPU-only machine and `jax.jit` on JAX). The
batches are made by the bundle's own `training_dataset` and cached, so
the timed steps see the bundle's batch shapes without re-tokenizing:

- warm-up: one `fit` epoch over the `--batches` cached batches, which
  compiles every batch shape among them (its wall time, mostly
  compilation, is "warm-up s");
- timed: `fit` for `--epochs` epochs of `--steps` steps over the same
  batches; the child's figure is examples per second of the median epoch.

The parent alternates the backends for `--rounds` rounds (JAX then TF
in rounds 1, 3, ..., TF then JAX in rounds 2, 4, ..., so drifting load
hits both alike) and prints a Markdown table of the medians over rounds,
with the range of the per-round JAX / TF ratios.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# The backend is the environment's: the children get KERAS_BACKEND.
import keras
import tensorflow as tf

from attention_zoo_apps import registry
from benchmarks import harness

APPS = registry.APPLICATIONS
BACKENDS = ("jax", "tensorflow")
RESULT = "RESULT "  # the child's result line: this, then JSON

# Application -> `tiny_config().replace(**...)`: small models whose steps
# take milliseconds to tens of milliseconds here (the batch size is set
# per run).
SETTINGS = {
    "translation": dict(
        embedding_dim=32,
        units=64,
        source_vocabulary_size=300,
        target_vocabulary_size=300,
        max_length=16,
    ),
    "entailment": dict(
        embedding_dim=32, hidden_units=64, vocabulary_size=400, max_length=24
    ),
    "captioning": dict(
        image_size=32,
        embedding_dim=16,
        units=32,
        vocabulary_size=100,
        max_length=9,
    ),
    "ehr": dict(
        embedding_dim=32,
        units=32,
        encoder="multihead",
        num_heads=2,
        note_vocabulary_size=200,
    ),
}


def make_config(app, batch_size):
    """APP's benchmark config: its tiny config with `SETTINGS[app]`."""
    config = registry.get(app).tiny_config()
    return config.replace(**SETTINGS[app], batch_size=batch_size)


# -- the child: one application on this process's backend ------------------


def measure(app, batch_size, batches, steps, epochs):
    """Times APP's training on this process's Keras backend.

    Returns:
        A dict: `backend`, `jit_compile` (the trained model's, after
        compiling), `parameters`, `batch_size`, `shapes` (distinct batch
        shapes among the `batches`), `warmup_s`, `epoch_s` (the timed
        epochs' wall times) and `examples_per_s` (of the median epoch).
    """
    application = registry.get(app)
    bundle = application.bundle_class()(make_config(app, batch_size))
    data = application.fit_arguments(batches * batch_size)
    train = data if len(data) > 1 else data[0]  # as the bundle's `fit`
    bundle.ensure_vocabularies(train)
    bundle.ensure_model()
    model = bundle.training_model()
    dataset = bundle.training_dataset(train).take(batches).cache()
    # Batch sizes and shapes; this pass also fills the cache.
    shapes = [
        tuple(tuple(x.shape) for x in tf.nest.flatten(batch))
        for batch in dataset
    ]
    sizes = [shape[0][0] for shape in shapes]
    examples = sum(sizes[step % len(sizes)] for step in range(steps))

    timer = harness.EpochTimer()
    start = time.perf_counter()
    model.fit(dataset, epochs=1, verbose=0)
    warmup = time.perf_counter() - start
    model.fit(
        dataset.repeat(),
        epochs=epochs,
        steps_per_epoch=steps,
        callbacks=[timer],
        verbose=0,
    )
    return {
        "app": app,
        "backend": keras.backend.backend(),
        "jit_compile": model.jit_compile,
        "parameters": model.count_params(),
        "batch_size": bundle.global_batch_size,
        "shapes": len(set(shapes)),
        "warmup_s": warmup,
        "epoch_s": timer.times,
        "examples_per_s": examples / statistics.median(timer.times),
    }


# -- the parent: children in alternation, then the table -------------------


def run_child(app, backend, args):
    """`measure` in a child process on `backend`; returns its dict."""
    command = [
        sys.executable,
        "-m",
        __spec__.name,
        "--child",
        app,
        f"--batch-size={args.batch_size}",
        f"--batches={args.batches}",
        f"--steps={args.steps}",
        f"--epochs={args.epochs}",
    ]
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        command, cwd=harness.ROOT, env=env, capture_output=True, text=True
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    raise RuntimeError(
        f"{app} on {backend} failed (exit {done.returncode}):\n"
        + done.stderr[-3000:]
    )


def summarize(results):
    """Per-round child results -> one row per application: the medians
    over rounds and the range of the per-round JAX / TF ratios."""
    rows = {}
    for app, rounds in results.items():
        ratios = [
            r["jax"]["examples_per_s"] / r["tensorflow"]["examples_per_s"]
            for r in rounds
        ]
        row = {"ratios": ratios}
        for backend in BACKENDS:
            runs = [r[backend] for r in rounds]
            row[backend] = {
                "examples_per_s": statistics.median(
                    run["examples_per_s"] for run in runs
                ),
                "warmup_s": statistics.median(run["warmup_s"] for run in runs),
                "jit_compile": runs[0]["jit_compile"],
            }
        first = rounds[0]["jax"]
        for key in ("batch_size", "parameters", "shapes"):
            row[key] = first[key]
        row["ratio"] = (
            row["jax"]["examples_per_s"] / row["tensorflow"]["examples_per_s"]
        )
        rows[app] = row
    return rows


def format_table(rows):
    """The Markdown table of `summarize`'s rows."""
    lines = [
        "| application | batch | parameters | shapes | TF jit | JAX jit "
        "| TF ex/s | JAX ex/s | JAX / TF | rounds' JAX / TF "
        "| TF warm-up s | JAX warm-up s |",
        "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: "
        "| ---: | ---: | ---: |",
    ]
    for app, row in rows.items():
        tf_row, jax_row = row["tensorflow"], row["jax"]
        low, high = min(row["ratios"]), max(row["ratios"])
        lines.append(
            f"| {app} | {row['batch_size']} | {row['parameters']:,} "
            f"| {row['shapes']} | {tf_row['jit_compile']} "
            f"| {jax_row['jit_compile']} "
            f"| {tf_row['examples_per_s']:,.0f} "
            f"| {jax_row['examples_per_s']:,.0f} | {row['ratio']:.2f}x "
            f"| {low:.2f}-{high:.2f}x | {tf_row['warmup_s']:.1f} "
            f"| {jax_row['warmup_s']:.1f} |"
        )
    return "\n".join(lines)


def parser():
    parser = harness.parser(__doc__)
    parser.add_argument("--apps", nargs="+", choices=APPS, default=APPS)
    parser.add_argument("--rounds", type=int, default=3, help="per backend")
    parser.add_argument("--steps", type=int, default=30, help="per timed epoch")
    parser.add_argument("--epochs", type=int, default=3, help="timed")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--batches", type=int, default=4, help="distinct batches, cached"
    )
    parser.add_argument("--child", choices=APPS, help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    return harness.run(__file__, parser(), measure_all, argv)


def measure_all(args):
    """The child's `measure`, or the parent's rounds and table."""
    if args.child:
        result = measure(
            args.child, args.batch_size, args.batches, args.steps, args.epochs
        )
        print(RESULT + json.dumps(result), flush=True)
        return result
    print(
        f"batch {args.batch_size}, {args.batches} cached batches; "
        f"{args.epochs} epochs of {args.steps} steps after a warm-up "
        f"epoch; medians of {args.rounds} rounds, backends alternated",
        flush=True,
    )
    results = {app: [] for app in args.apps}
    for round_index in range(args.rounds):
        order = BACKENDS if round_index % 2 == 0 else BACKENDS[::-1]
        for app in args.apps:
            results[app].append(
                {backend: run_child(app, backend, args) for backend in order}
            )
            done = results[app][-1]
            print(
                f"round {round_index + 1} {app}: "
                + ", ".join(
                    f"{b} {done[b]['examples_per_s']:,.0f} ex/s" for b in order
                ),
                flush=True,
            )
    rows = summarize(results)
    print()
    print(format_table(rows))
    return rows


if __name__ == "__main__":
    main()
