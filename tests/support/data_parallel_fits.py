"""A model of `AdditiveAttention`, `MultiHead` and `AttentionPooling`
fitted on one device, then under `keras.distribution.DataParallel`, from
the same weights on the same batches (`compare_single_and_data_parallel`,
run in the JAX subprocess of `tests/layers/data_parallel_test.py`)."""

import keras
import numpy as np

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
