"""`tf.distribute` strategies for `attention-zoo train APP --strategy NAME`.

    default       one device: the first GPU if there is one, else the CPU
    mirrored      one machine, one replica per GPU (per logical CPU device
                  when there is no GPU, see `split_cpu`)
    multi-worker  several machines, each described by the TF_CONFIG
                  environment variable; one replica per GPU of each
    tpu           the TPU named by TPU_NAME (default: "local", a TPU VM)

and, on the JAX backend, `--distribution data-parallel`
(`distribution_from_flag`: `keras.distribution.DataParallel`, the path
keras-hub documents for JAX).

A bundle given a strategy (`Bundle(config, strategy=...)`) builds and
compiles its model under `strategy.scope()`, so every variable is mirrored,
and `model.fit` then splits each batch across the replicas. The config's
`batch_size` is per replica: a batch holds `batch_size *
num_replicas_in_sync` examples (`global_batch_size`), so each replica
keeps the batch size the learning rate was tuned for.

Multi-worker training writes checkpoints as the tf.distribute guide
recommends: every worker saves (Keras's callbacks know nothing of the
cluster), but only the chief into the run directory; the others save into
a temporary folder that is removed after `fit` (see
`attention_zoo_apps.common.training.worker_directory`).
"""

import contextlib
import functools
import json
import os
import warnings

import keras
import tensorflow as tf

from attention_zoo_apps.common.flag_checks import STRATEGIES
from attention_zoo_apps.common.flag_checks import UsageError


def strategy_from_flag(name):
    """`make_strategy(name)`; a name it cannot make is a `UsageError`.

    On the JAX backend (`KERAS_BACKEND=jax`) there is no
    `tf.distribute`: `default` is None (one device, as Keras places it)
    and the others are a usage error.
    """
    if keras.backend.backend() != "tensorflow":
        if name != "default":
            raise UsageError(
                f"--strategy {name} is a tf.distribute strategy: it needs "
                "the TensorFlow backend (KERAS_BACKEND=tensorflow). On "
                f"{keras.backend.backend()} leave --strategy out"
            )
        return None
    try:
        return make_strategy(name)
    except ValueError as error:
        raise UsageError(str(error)) from None


@functools.cache
def make_strategy(name="default"):
    """The `tf.distribute.Strategy` called `name` (one of `STRATEGIES`).

    Call it before TensorFlow runs anything else: `multi-worker` sets up
    collective ops, which must happen at program start. A process gets
    one strategy per name (later calls return it): a second
    `MirroredStrategy` over the same devices reuses the first one's
    collective keys, and the all-reduce of whichever trains second fails
    ("Shape mismatch in the collective instance").

    Raises:
        ValueError: for an unknown name, `multi-worker` without TF_CONFIG,
            or `tpu` where no TPU answers.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        devices = tf.config.list_logical_devices("GPU")
        devices = devices or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([d.name for d in devices])
    if name == "multi-worker":
        if not os.environ.get("TF_CONFIG"):
            raise ValueError(
                "The 'multi-worker' strategy reads the cluster from the "
                "TF_CONFIG environment variable, which is not set. Each "
                'machine needs one, e.g. TF_CONFIG=\'{"cluster": '
                '{"worker": ["host1:12345", "host2:12345"]}, "task": '
                '{"type": "worker", "index": 0}}\''
            )
        _check_tf_config(os.environ["TF_CONFIG"])
        return KerasMultiWorkerStrategy()
    if name == "tpu":
        return _tpu_strategy(os.environ.get("TPU_NAME") or "local")
    raise ValueError(
        f"`name` must be one of {STRATEGIES}. Received: name={name!r}"
    )


class KerasMultiWorkerStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`MultiWorkerMirroredStrategy` whose `reduce` also takes what Keras
    3's `fit` gives it.

    Keras 3.15's TensorFlow trainer calls `strategy.reduce("MEAN", batch,
    axis=None)` on a nested batch (to build the model symbolically) and
    `strategy.reduce("MEAN", logs, axis=0)` on scalar step logs. The
    single-machine strategies accept both; this one rejects a nest
    ("unsupported type PerReplica") and a scalar with an axis ("Invalid
    reduction dimension 0"; keras-team/keras#20585). Here each leaf is
    reduced on its own, scalars across replicas only.
    """

    def reduce(self, reduce_op, value, axis):
        def reduce_leaf(leaf):
            local = leaf
            if isinstance(leaf, tf.distribute.DistributedValues):
                local = self.experimental_local_results(leaf)[0]
            leaf_axis = axis
            if axis is not None and local.shape.rank == 0:
                leaf_axis = None  # a scalar: the mean over replicas
            return super(KerasMultiWorkerStrategy, self).reduce(
                reduce_op, leaf, leaf_axis
            )

        return tf.nest.map_structure(reduce_leaf, value)


def _check_tf_config(text):
    try:
        config = json.loads(text)
        config["cluster"], config["task"]["type"], config["task"]["index"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            "TF_CONFIG must be JSON with a 'cluster' and a 'task' with "
            f"'type' and 'index'. Received: TF_CONFIG={text!r}"
        ) from error


def _tpu_strategy(address):
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=address
        )
        if resolver.master():  # a TPU node: connect to it over gRPC
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError) as error:
        first_line = str(error).strip().splitlines()[0]
        raise ValueError(
            f"No TPU found for the 'tpu' strategy at {address!r} (set "
            "TPU_NAME to the TPU's name or grpc:// address; 'local' on a "
            f"TPU VM): {first_line}"
        ) from error
    return tf.distribute.TPUStrategy(resolver)


def distribution_from_flag(name):
    """`--distribution NAME` (None: not given): on JAX, for
    `data-parallel`, a `keras.distribution.DataParallel` over every
    local device, which the bundle then holds as its `strategy`. Elsewhere
    a `UsageError`.

    A bundle given one builds its model in its `scope()` (the variables
    replicated on every device) and trains in it (`fit_scope`): Keras
    splits each batch among the devices and the gradients are averaged,
    so a run computes what one device would with the same global batch.
    `batch_size` is per device, as with `--strategy mirrored`
    (`global_batch_size`), and a last batch that does not split evenly is
    left out (`whole_batches`).
    """
    if name is None:
        return None
    if keras.backend.backend() != "jax":
        raise UsageError(
            f"--distribution {name} is keras.distribution's, for the JAX "
            "backend (KERAS_BACKEND=jax). On TensorFlow use --strategy "
            "mirrored"
        )
    return keras.distribution.DataParallel(
        devices=keras.distribution.list_devices()
    )


def is_tf_strategy(strategy):
    """Whether `strategy` is a `tf.distribute.Strategy` (not None, not a
    `keras.distribution.Distribution`)."""
    return strategy is not None and not _is_distribution(strategy)


def _is_distribution(strategy):
    # Keras exports no common base of its distributions.
    return isinstance(
        strategy,
        (keras.distribution.DataParallel, keras.distribution.ModelParallel),
    )


def num_replicas(strategy=None):
    """Replicas in sync of `strategy` (None: the default strategy, 1; a
    `keras.distribution.Distribution`: its devices)."""
    if strategy is None:
        return 1
    if _is_distribution(strategy):
        return int(strategy.device_mesh.devices.size)
    return strategy.num_replicas_in_sync


def global_batch_size(batch_size, strategy=None):
    """`batch_size` per replica times the replicas of `strategy`."""
    return batch_size * num_replicas(strategy)


def scope(strategy=None):
    """`strategy.scope()`, or a no-op context for None."""
    if strategy is None:
        return contextlib.nullcontext()
    return strategy.scope()


def fit_scope(strategy=None):
    """Where `model.fit` runs: a `keras.distribution.Distribution`'s
    `scope()`, which Keras's JAX trainer reads to split the batches; a
    no-op context otherwise (a `tf.distribute` model carries its
    strategy)."""
    if _is_distribution(strategy):
        return _distribution_fit_scope(strategy)
    return contextlib.nullcontext()


@contextlib.contextmanager
def _distribution_fit_scope(distribution):
    with distribution.scope(), warnings.catch_warnings():
        # `whole_batches` filters, so the datasets' lengths are unknown
        # until their first epoch ends, which Keras's epoch iterator
        # reports as "Your input ran out of data" (and then knows).
        warnings.filterwarnings("ignore", "Your input ran out of data")
        yield


def whole_batches(dataset, strategy=None):
    """`dataset` (of batches) without the batches that `strategy`'s
    devices cannot share evenly (a last, smaller batch), under a
    `keras.distribution.Distribution` of several devices; `dataset`
    itself otherwise (tf.distribute splits any batch)."""
    devices = num_replicas(strategy) if _is_distribution(strategy) else 1
    if devices == 1:
        return dataset

    def even(*batch):
        first = tf.nest.flatten(batch)[0]
        return tf.shape(first)[0] % devices == 0

    return dataset.filter(even)


def is_chief(strategy=None):
    """Whether this process writes the run's files: True except on the
    workers of a multi-worker cluster other than its chief (the "chief"
    task, or worker 0 where the cluster has no "chief")."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or resolver.task_type is None:
        return True
    if resolver.task_type == "chief":
        return True
    cluster = resolver.cluster_spec().as_dict()
    return (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and "chief" not in cluster
    )


def task_id(strategy=None):
    """This worker's index in its cluster (0 outside multi-worker)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or resolver.task_id is None:
        return 0
    return int(resolver.task_id)


def split_cpu(count):
    """Splits the host CPU into `count` logical devices, so that
    `mirrored` runs `count` replicas on a machine without GPUs (for tests
    and benchmarks; the replicas share the cores).

    Call it before TensorFlow initialises its devices.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
    )
