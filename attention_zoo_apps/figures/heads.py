"""The lecture notes' multi-head attention ("each head can be thinking
about something very different"): one `MultiHead` layer trained in a few
seconds to name, at every position, both the previous and the next token
of a random sequence, and each head's attention map on a new sequence."""

import os

import keras
import numpy as np
from keras import ops
from matplotlib import pyplot as plt

from attention_zoo.blocks import PositionalEmbedding
from attention_zoo.layers import MultiHead
from attention_zoo_apps.common.plots import save_figure
from attention_zoo_apps.figures.gallery import Figure

LETTERS = "abcdefghijklmno"  # token i is LETTERS[i - 1]; 0 is unused
STEPS = 10
SEQUENCES = 6400
EPOCHS = 4


def _shifted(tokens, offset):
    """`tokens` moved `offset` steps to the right (0 where none is)."""
    shifted = np.roll(tokens, offset, axis=1)
    if offset > 0:
        shifted[:, :offset] = 0
    else:
        shifted[:, offset:] = 0
    return shifted


def train_heads(num_heads=4, seed=0):
    """`(embedding, attention, accuracy)`: a `PositionalEmbedding` and a
    `MultiHead` layer trained together, under two softmax heads, to give
    the previous and the next token at every position; `accuracy` is the
    mean of their training accuracies after the last epoch."""
    keras.utils.set_random_seed(seed)
    vocabulary = len(LETTERS) + 1
    ids = keras.Input((STEPS,), dtype="int32")
    embedding = PositionalEmbedding(
        vocabulary, 32, max_length=STEPS, mask_zero=False
    )
    attention = MultiHead(num_heads=num_heads, key_dim=8, name="heads")
    x = embedding(ids)  # (B, T, 32)
    y = attention(x, x)  # (B, T, 32)
    outputs = {
        name: keras.layers.Dense(vocabulary, name=name)(y)
        for name in ("previous", "next")
    }
    model = keras.Model(ids, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics={name: "accuracy" for name in outputs},
    )
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, vocabulary, (SEQUENCES, STEPS)).astype("int32")
    targets = {"previous": _shifted(tokens, 1), "next": _shifted(tokens, -1)}
    history = model.fit(
        tokens, targets, batch_size=64, epochs=EPOCHS, verbose=0
    )
    accuracy = np.mean(
        [history.history[f"{name}_accuracy"][-1] for name in outputs]
    )
    return embedding, attention, float(accuracy)


def offsets(weights):
    """Per head `(offset, share)`: the key offset `j - i` most often
    strongest over the queries `i`, and the share of queries it is."""
    steps = weights.shape[-1]
    strongest = np.argmax(weights, axis=-1) - np.arange(steps)  # (H, T)
    found = []
    for row in strongest:
        values, counts = np.unique(row, return_counts=True)
        found.append((int(values[np.argmax(counts)]), counts.max() / steps))
    return found


def _offset_name(offset):
    if offset == 0:
        return "itself"
    side = "previous" if offset < 0 else "next"
    return side if abs(offset) == 1 else f"{abs(offset)} to the {side}"


def heads(out, num_heads=4, seed=0):
    """The heads of the trained layer on a sequence it has not seen."""
    embedding, attention, accuracy = train_heads(num_heads, seed)
    rng = np.random.default_rng(seed + 1)
    tokens = rng.integers(1, len(LETTERS) + 1, (1, STEPS)).astype("int32")
    x = embedding(tokens)
    _, weights = attention(x, x, return_attention_scores=True)
    weights = ops.convert_to_numpy(weights)[0]  # (H, T, T)
    labels = [f"{LETTERS[i - 1]}{t}" for t, i in enumerate(tokens[0])]

    fig, axes = plt.subplots(
        1,
        num_heads,
        figsize=(3.6 * num_heads + 1, 3.6),
        squeeze=False,
        layout="constrained",
    )
    for h, ax in enumerate(axes[0]):
        image = ax.imshow(weights[h], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(STEPS), labels, rotation=90)
        ax.set_yticks(range(STEPS), labels)
        ax.set_xlabel("key (token, position)")
        ax.set_ylabel("query (token, position)")
        ax.set_title(f"head {h + 1}")
    fig.colorbar(image, ax=axes[0].tolist(), label="attention weight")
    path = save_figure(fig, os.path.join(out, "heads.png"))
    roles = "; ".join(
        f"head {h + 1}: {_offset_name(offset)} for {share:.0%}"
        for h, (offset, share) in enumerate(offsets(weights))
    )
    caption = (
        f"The {num_heads} heads of one `MultiHead` self-attention layer "
        f"(after a sinusoidal `PositionalEmbedding`), trained here for "
        f"{EPOCHS} epochs on {SEQUENCES} random sequences of {STEPS} "
        f"letters to give, at every position, the previous and the next "
        f"letter (accuracy {accuracy:.1%}), drawn on a new sequence. Where "
        f"each head's strongest key lies, over the queries: {roles}. The "
        f"heads split the task between them, the lecture's point; its "
        f"pictures are of a trained translation transformer, none of which "
        f"is shipped (the shipped translators are RNNs), so the task here "
        f"is a toy one whose answer is known."
    )
    return Figure(
        "heads", "Multi-head attention: one map per head", (path,), caption
    )
