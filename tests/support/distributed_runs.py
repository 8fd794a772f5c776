"""Tiny training runs of the applications under a tf.distribute
strategy, run in a subprocess by the distribution tests.

    python -m tests.support.distributed_runs compare APP...  # prints JSON
    python -m tests.support.distributed_runs multi-worker APP OUT_DIR
    python -m tests.support.distributed_runs cli DEVICES ARGS...

`run(*args)` runs one of these from the repository root and returns the
`subprocess.CompletedProcess`.

`compare` splits the CPU into two logical devices (before TensorFlow
starts) and trains each APP's tiny model twice on the same data: with the
default strategy and a batch of `2 * BATCH`, and with `mirrored` (two
replicas) and `BATCH` per replica, so both see the same global batches. It
prints, per APP, both loss curves (the running mean of every step), the
replica counts and the global batch sizes, and whether inference runs
after mirrored training.

`multi-worker` runs one worker of the cluster in TF_CONFIG: the tiny model
under the `multi-worker` strategy with checkpoints in `OUT_DIR/run`,
interrupted after its first epoch and resumed from the run directory,
then writes its final weights to `OUT_DIR/weights-<task>.npz` and the
epochs the resumed run began to `OUT_DIR/epochs-<task>.json`.

`cli` splits the CPU into DEVICES logical devices and runs `attention-zoo
ARGS...`, exiting with its status.
"""

import json
import os
import subprocess
import sys

from attention_zoo_apps import registry

ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)

BATCH = 8  # per replica
STEPS = 6  # steps per epoch: every batch full
EPOCHS = 2
APPS = registry.APPLICATIONS

# Application -> the seed of its generated examples, and the sizes in
# which its model differs from its tiny config.
SEEDS = {"translation": 0, "entailment": 0, "captioning": 0, "ehr": 3}
SIZES = {
    "translation": dict(
        units=16, source_vocabulary_size=120, target_vocabulary_size=120
    ),
    "entailment": dict(hidden_units=12, vocabulary_size=200),
}


def _translate(bundle, pairs):
    return bundle.translate([source for source, _ in pairs[:2]])


def _entail(bundle, examples):
    result = bundle.predict(examples.premises[:2], examples.hypotheses[:2])
    return result["labels"]


def _caption(bundle, images, captions):
    return bundle.caption(images[:2], beam_size=2)


def _risk(bundle, records):
    return bundle.predict(records.select(range(2)))["risk"]


# Application -> its inference on two of its generated examples, called as
# `INFER[app](bundle, *registry.get(app).fit_arguments(...))`.
INFER = {
    "translation": _translate,
    "entailment": _entail,
    "captioning": _caption,
    "ehr": _risk,
}


def tiny_run(app, strategy, batch_size=BATCH):
    """`(bundle, fit, infer)`: APP's tiny bundle under `strategy` with
    `batch_size` per replica, `fit(bundle, **kwargs)` training a bundle on
    `STEPS` global batches and `infer(bundle)` running its inference on
    two examples."""
    from attention_zoo_apps.common import distribute

    application = registry.get(app)
    examples = STEPS * distribute.global_batch_size(batch_size, strategy)
    data = application.fit_arguments(examples, seed=SEEDS[app])
    config = application.tiny_config().replace(
        **SIZES.get(app, {}),
        dropout=0.0,
        batch_size=batch_size,
        epochs=EPOCHS,
        seed=0,
    )
    return (
        application.bundle_class()(config, strategy=strategy),
        lambda bundle, **kwargs: bundle.fit(*data, **kwargs),
        lambda bundle: INFER[app](bundle, *data),
    )


def _record_losses():
    import keras

    losses = []
    callback = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(
            float(logs["loss"])
        )
    )
    return losses, callback


def compare(app):
    """Default strategy with a batch of `2 * BATCH` vs `mirrored` over two
    logical CPUs (`distribute.split_cpu(2)` first) with `BATCH` per
    replica."""
    from attention_zoo_apps.common import distribute

    runs = {}
    for name in ("default", "mirrored"):
        strategy = distribute.make_strategy(name)
        # The same global batches: 2 * BATCH on one device or on two.
        batch_size = 2 * BATCH // distribute.num_replicas(strategy)
        bundle, fit, infer = tiny_run(app, strategy, batch_size)
        # Under a strategy Keras draws a batch before the first epoch (to
        # build the model), which moves a reshuffling dataset on by one
        # order: compare in data order.
        dataset = bundle.dataset
        bundle.dataset = lambda *args, shuffle=False, **kwargs: dataset(
            *args, **kwargs
        )
        losses, callback = _record_losses()
        fit(bundle, callbacks=[callback], verbose=0)
        runs[name] = {
            "losses": losses,
            "replicas": distribute.num_replicas(strategy),
            "global_batch_size": bundle.global_batch_size,
        }
    # Inference (XLA-compiled) on variables mirrored over two devices.
    runs["mirrored"]["inference"] = repr(infer(bundle))
    return runs


def multi_worker(app, out_dir):
    """One worker: interrupted after epoch 1, resumed, weights saved."""
    import keras
    import numpy as np

    from attention_zoo_apps.common import distribute

    strategy = distribute.make_strategy("multi-worker")
    task = distribute.task_id(strategy)
    run_dir = os.path.join(out_dir, "run")

    class Interrupt(Exception):
        pass

    def interrupt(epoch, logs=None):
        if epoch == 1:
            raise Interrupt()

    bundle, fit, _ = tiny_run(app, strategy)
    try:
        fit(
            bundle,
            checkpoint_dir=run_dir,
            callbacks=[
                keras.callbacks.LambdaCallback(on_epoch_begin=interrupt)
            ],
            verbose=0,
        )
    except Interrupt:
        pass
    # A barrier (an all-reduce): the chief has written its backup.
    strategy.reduce("SUM", strategy.run(lambda: 1.0), axis=None)
    resumed = type(bundle).load_assets(run_dir, strategy)
    seen = []
    record = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs=None: seen.append(epoch)
    )
    fit(resumed, checkpoint_dir=run_dir, callbacks=[record], verbose=0)
    weights = {str(i): w for i, w in enumerate(resumed.model.get_weights())}
    np.savez(os.path.join(out_dir, f"weights-{task}.npz"), **weights)
    with open(os.path.join(out_dir, f"epochs-{task}.json"), "w") as f:
        json.dump(
            {
                "resumed_epochs": seen,
                "replicas": distribute.num_replicas(strategy),
            },
            f,
        )


def run(*args, env=None, timeout=300):
    """`python -m tests.support.distributed_runs ARGS` in a fresh process (the
    logical devices must be set before TensorFlow starts), from the
    repository root, with `env` added to the environment."""
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "tests.support.distributed_runs", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=ROOT,
    )


def start(*args, env=None):
    """Like `run`, without waiting: a `subprocess.Popen` (text pipes)."""
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.distributed_runs", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
        cwd=ROOT,
    )


def _main(command, *args):
    if command == "compare":
        from attention_zoo_apps.common import distribute

        distribute.split_cpu(2)
        print(json.dumps({app: compare(app) for app in args}))
        return 0
    if command == "multi-worker":
        multi_worker(*args)
        return 0
    if command == "cli":
        from attention_zoo_apps import cli
        from attention_zoo_apps.common import distribute

        distribute.split_cpu(int(args[0]))
        return cli.main(list(args[1:]))
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(_main(*sys.argv[1:]))
