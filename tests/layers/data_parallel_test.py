"""The layers under `keras.distribution.DataParallel` on the JAX backend.

A model of `AdditiveAttention`, `MultiHead` and `AttentionPooling` is
trained twice on the same batches from the same weights: on one device,
then with `DataParallel` over two CPU devices (each step's batch split in
two, the weights replicated). The loss curves must agree. It runs in a
subprocess with `KERAS_BACKEND=jax` and
`XLA_FLAGS=--xla_force_host_platform_device_count=2` (both must be set
before JAX starts), so it runs the same under either backend of the suite.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
BATCH = 8  # global: 4 examples on each device
EPOCHS = 6


def build_model(vocabulary_size=40, width=16):
    """Tokens `(B, T)` -> 3 logits: embedding, Bahdanau self-attention,
    multi-head self-attention, attention pooling."""
    import attention_zoo

    tokens = keras.Input((None,), dtype="int32", name="tokens")
    embedded = keras.layers.Embedding(vocabulary_size, width, mask_zero=True)(
        tokens
    )  # (B, T, width), masked where tokens == 0
    context = attention_zoo.AdditiveAttention(units=width)(embedded, embedded)
    mixed = attention_zoo.MultiHead(num_heads=2, key_dim=8)(context, context)
    pooled = attention_zoo.AttentionPooling(units=width)(mixed)  # (B, width)
    logits = keras.layers.Dense(3, dtype="float32", name="logits")(pooled)
    return keras.Model(tokens, logits)


def make_data(count=32, length=10, vocabulary_size=40, seed=0):
    """Padded token rows; the class is the first token modulo 3."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, vocabulary_size, (count, length)).astype("int32")
    lengths = rng.integers(4, length + 1, count)
    tokens[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return tokens, (tokens[:, 0] % 3).astype("int32")


def _fit(model, weights, tokens, labels):
    model.set_weights(weights)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(
        tokens,
        labels,
        batch_size=BATCH,
        epochs=EPOCHS,
        shuffle=False,
        verbose=0,
    )
    return history.history["loss"]


def compare_single_and_data_parallel():
    """Runs in the JAX subprocess: both loss curves and the devices."""
    import jax

    tokens, labels = make_data()
    keras.utils.set_random_seed(0)
    single = build_model()
    weights = single.get_weights()
    single_losses = _fit(single, weights, tokens, labels)

    devices = keras.distribution.list_devices()
    keras.distribution.set_distribution(
        keras.distribution.DataParallel(devices=devices)
    )
    parallel = build_model()  # variables replicated on every device
    parallel_losses = _fit(parallel, weights, tokens, labels)
    kernel = parallel.get_layer("logits").kernel.value
    return {
        "backend": keras.backend.backend(),
        "devices": len(jax.devices()),
        "weight_devices": len(kernel.sharding.device_set),
        "single": single_losses,
        "data_parallel": parallel_losses,
    }


def test_data_parallel_matches_one_device():
    env = dict(
        os.environ,
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    script = (
        "import json\n"
        "from tests.layers.data_parallel_test import "
        "compare_single_and_data_parallel\n"
        "print(json.dumps(compare_single_and_data_parallel()))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["backend"] == "jax"
    assert result["devices"] == result["weight_devices"] == 2
    single, parallel = result["single"], result["data_parallel"]
    assert len(parallel) == EPOCHS
    assert parallel[-1] < 0.8 * parallel[0]  # it learns
    # The same global batches and weights: the same curve, up to the
    # order in which the two halves' gradients are summed.
    np.testing.assert_allclose(parallel, single, rtol=1e-4)
