"""Training throughput of the applications under `--strategy mirrored`.

Run from the repository root (TensorFlow backend):

    python -m benchmarks.mirrored_throughput [--out DIR]
    python -m benchmarks.mirrored_throughput --quick          # smoke test
    python -m benchmarks.mirrored_throughput --apps ehr entailment

The host CPU is split into two logical devices
(`attention_zoo_apps.common.distribute.split_cpu`) before TensorFlow starts, and
each application's model trains on the same data with the same global
batch of `2 * B` examples three ways:

- default: the default strategy, one device, batches of `2 * B`;
- mirrored x1: `MirroredStrategy` on one logical device, `2 * B` (what
  the strategy costs by itself);
- mirrored x2: `MirroredStrategy` on two logical devices, `B` per replica
  (`--strategy mirrored` with `--batch-size B`).

Throughput is training examples per second of an epoch's wall time, the
median over the timed epochs after one warm-up epoch (tracing). The two
logical devices share the same cores, so on a CPU this measures the
overhead of splitting each step, not a speed-up: with one GPU per replica
each replica computes on its own device.
"""

import functools
import os
import statistics

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from attention_zoo_apps import registry  # noqa: E402
from attention_zoo_apps.common import distribute  # noqa: E402
from benchmarks import harness  # noqa: E402

APPS = registry.APPLICATIONS
SETUPS = ("default", "mirrored x1", "mirrored x2")

# Application -> its model's sizes (the batch size is set per run).
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
        embedding_dim=32,
        units=64,
        vocabulary_size=200,
        max_length=10,
    ),
    "ehr": dict(embedding_dim=32, units=32, encoder="multihead", num_heads=2),
}


def make_workload(app, count, batch_size, strategy):
    """`(bundle, fit, examples)`: APP's bundle with `batch_size` per
    replica under `strategy`, `fit(epochs, callbacks)` and the examples
    an epoch trains on (`count` records, pairs or images)."""
    application = registry.get(app)
    bundle_class = application.bundle_class()
    data = application.fit_arguments(count)
    config = bundle_class.config_class(**SETTINGS[app], batch_size=batch_size)
    bundle = bundle_class(config, strategy=strategy)
    examples = len(data[0])
    if app == "captioning":  # an example per caption
        examples = sum(1 if isinstance(c, str) else len(c) for c in data[1])
    return bundle, _fitter(bundle, *data), examples


def _fitter(bundle, *data):
    def fit(epochs, callbacks):
        bundle.fit(*data, epochs=epochs, callbacks=callbacks, verbose=0)

    return fit


@functools.cache
def strategy_for(setup):
    """One strategy per setup for the whole run (as `make_strategy`
    gives): a second MirroredStrategy over the same devices would reuse
    the first one's collective keys."""
    if setup == "default":
        return None
    if setup == "mirrored x1":
        return tf.distribute.MirroredStrategy(["/cpu:0"])
    return distribute.make_strategy("mirrored")  # every logical CPU


def measure(app, setup, count, global_batch, epochs):
    """Examples per second: the median over `epochs` timed epochs."""
    strategy = strategy_for(setup)
    batch_size = global_batch // distribute.num_replicas(strategy)
    _, fit, examples = make_workload(app, count, batch_size, strategy)
    timer = harness.EpochTimer()
    fit(epochs + 1, [timer])
    return examples / statistics.median(timer.times[1:])


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--apps", nargs="+", choices=APPS, default=APPS)
    parser.add_argument("--examples", type=int, default=1024, help="per epoch")
    parser.add_argument(
        "--global-batch", type=int, default=64, help="split over replicas"
    )
    parser.add_argument("--epochs", type=int, default=4, help="timed")
    parser.add_argument("--quick", action="store_true", help="smoke test")
    return harness.run(__file__, parser, measure_all, argv)


def measure_all(args):
    """Examples per second by application and set-up."""
    if args.quick:
        args.examples, args.global_batch, args.epochs = 128, 32, 1

    distribute.split_cpu(2)  # before anything starts TensorFlow
    print(
        f"{args.examples} examples an epoch, global batch "
        f"{args.global_batch}; median of {args.epochs} epochs after one "
        "warm-up; examples/s"
    )
    header = f"{'application':<13}" + "".join(f"{s:>14}" for s in SETUPS)
    print(f"\n{header}{'x2 / default':>14}")
    rows = {}
    for app in args.apps:
        rows[app] = {
            setup: measure(
                app, setup, args.examples, args.global_batch, args.epochs
            )
            for setup in SETUPS
        }
        row = rows[app]
        ratio = row["mirrored x2"] / row["default"]
        print(
            f"{app:<13}"
            + "".join(f"{row[s]:>14,.0f}" for s in SETUPS)
            + f"{ratio:>13.2f}x",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    main()
