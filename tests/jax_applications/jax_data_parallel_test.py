"""`--distribution data-parallel` on JAX: `keras.distribution.DataParallel`
over the two host devices the JAX line shows (`tests/conftest.py`).

A data-parallel run computes what one device computes for the same
global batch: the losses of a tiny translator trained both ways are
equal within float tolerance. The command line's run (trained,
interrupted, resumed, exported and served) is the translation run of
`jax_translation_training_test.py`, which trains data-parallel."""

import keras
import numpy as np
import tensorflow as tf

from attention_zoo_apps import registry
from attention_zoo_apps.common import distribute
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator
from tests.support import jax_runs

pytestmark = jax_runs.ONLY_ON_JAX


def _fit(batch_size, strategy):
    keras.utils.set_random_seed(0)
    pairs = make_synthetic_pairs(100, seed=0).pairs
    config = registry.get("translation").tiny_config()
    translator = Translator(
        config.replace(batch_size=batch_size, epochs=2), strategy=strategy
    )
    history = translator.fit(pairs[:64], pairs[64:96], verbose=0)
    return translator, history.history


def test_data_parallel_trains_as_one_device_with_the_same_global_batch():
    assert len(keras.distribution.list_devices()) == 2
    strategy = distribute.distribution_from_flag("data-parallel")
    assert distribute.num_replicas(strategy) == 2
    parallel, split = _fit(8, strategy)  # 8 a device: batches of 16
    single, whole = _fit(16, None)
    assert parallel.global_batch_size == single.global_batch_size == 16
    for key in ("loss", "val_loss", "accuracy"):
        np.testing.assert_allclose(split[key], whole[key], rtol=1e-5)
    # Each variable has a copy on both devices.
    value = parallel.model.weights[0].value
    assert len(value.sharding.device_set) == 2
    assert len(single.model.weights[0].value.sharding.device_set) == 1
    # The trained translators translate alike after training.
    sources = [s for s, _ in make_synthetic_pairs(4, seed=5).pairs]
    assert parallel.translate(sources) == single.translate(sources)


def test_a_batch_the_devices_cannot_share_is_left_out():
    strategy = distribute.distribution_from_flag("data-parallel")
    for size, kept in ((10, [4, 4, 2]), (9, [4, 4])):  # 4, 4, 1 given
        batches = tf.data.Dataset.range(size).batch(4).map(lambda x: (x, x))
        shared = distribute.whole_batches(batches, strategy)
        assert [len(x) for x, _ in shared.as_numpy_iterator()] == kept
    assert distribute.whole_batches(batches, None) is batches
