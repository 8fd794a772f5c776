"""Figure 15.16 and the lecture notes' position encodings, from our layers
on small made-up inputs (no trained model): attention as a weighted
average (`BilinearAttention`) and the sinusoidal position encodings
(`PositionalEmbedding`)."""

import os

import numpy as np
from keras import ops
from matplotlib import pyplot as plt

from attention_zoo.blocks import PositionalEmbedding
from attention_zoo.layers import BilinearAttention
from attention_zoo_apps.common.plots import save_figure
from attention_zoo_apps.figures.gallery import Figure


def _numpy(x):
    return ops.convert_to_numpy(x)


def weighted_average(out, seed=0):
    """Figure 15.16: one query, six keys and values in the plane."""
    rng = np.random.default_rng(seed)
    query = np.array([[[1.5, 0.5]]], "float32")  # (1, Tq=1, 2)
    keys = rng.normal(size=(1, 6, 2)).astype("float32")  # (1, Tv, 2)
    values = rng.normal(size=(1, 6, 2)).astype("float32")
    layer = BilinearAttention(score="scaled_dot")
    output, weights = layer(
        query, values, key=keys, return_attention_scores=True
    )
    output, weights = _numpy(output)[0, 0], _numpy(weights)[0, 0]
    keys, values = keys[0], values[0]
    error = float(np.max(np.abs(output - weights @ values)))

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
    ax = axes[0]
    points = ax.scatter(
        keys[:, 0], keys[:, 1], c=weights, cmap="Reds", vmin=0.0, s=90
    )
    ax.scatter(*query[0, 0], marker="*", s=250, c="k", label="query q")
    for i, key in enumerate(keys):
        ax.annotate(f"k{i + 1}", key, xytext=(5, 5), textcoords="offset points")
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    ax.set_title("query and keys")
    ax.legend(loc="best", fontsize=8)
    fig.colorbar(points, ax=ax, label="attention weight")
    ax = axes[1]
    ax.bar([f"k{i + 1}" for i in range(len(weights))], weights, color="C3")
    ax.set_xlabel("key")
    ax.set_ylabel("attention weight alpha_i")
    ax.set_title("softmax(q . k_i / sqrt(d))")
    ax = axes[2]
    points = ax.scatter(
        values[:, 0], values[:, 1], c=weights, cmap="Reds", vmin=0.0, s=90
    )
    for i, value in enumerate(values):
        ax.annotate(
            f"v{i + 1}", value, xytext=(5, 5), textcoords="offset points"
        )
    ax.scatter(*output, marker="*", s=250, c="k", label="output sum alpha v")
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    ax.set_title("values and their weighted average")
    ax.legend(loc="best", fontsize=8)
    fig.colorbar(points, ax=ax, label="attention weight")
    path = save_figure(fig, os.path.join(out, "15.16-weighted-average.png"))
    top = int(np.argmax(weights))
    caption = (
        f'`BilinearAttention(score="scaled_dot")` on one query and six '
        f"random keys and values in two dimensions: the weights (colour, "
        f"middle) sum to {weights.sum():.3f}, the heaviest is key "
        f"k{top + 1} ({weights[top]:.2f}), and the layer's output is their "
        f"average of the values (largest difference from `weights @ "
        f"values`: {error:.1e}). The book's figure is a diagram of the "
        f"same computation; here the numbers come from the layer."
    )
    return Figure(
        "15.16",
        "Attention as a weighted average of values",
        (path,),
        caption,
    )


def positions(out, steps=50, dim=64):
    """The sinusoidal position encodings of `PositionalEmbedding`."""
    # A zero token table: the layer's output is its position term alone.
    layer = PositionalEmbedding(
        2, dim, max_length=steps, embeddings_initializer="zeros"
    )
    encodings = _numpy(layer(np.ones((1, steps), "int32")))[0]  # (T, D)
    similarity = encodings @ encodings.T / dim  # (T, T)

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), layout="constrained")
    image = axes[0].imshow(
        encodings, cmap="RdBu", vmin=-1.0, vmax=1.0, aspect="auto"
    )
    axes[0].set_xlabel("channel i (sines, then cosines)")
    axes[0].set_ylabel("position p")
    axes[0].set_title("P[p, i]")
    fig.colorbar(image, ax=axes[0], label="encoding value")
    image = axes[1].imshow(similarity, cmap="viridis")
    axes[1].set_xlabel("position p'")
    axes[1].set_ylabel("position p")
    axes[1].set_title("P[p] . P[p'] / D")
    fig.colorbar(image, ax=axes[1], label="scaled dot product")
    path = save_figure(fig, os.path.join(out, "positions.png"))
    off_diagonal = similarity[~np.eye(steps, dtype=bool)]
    caption = (
        f"The sinusoidal encodings `PositionalEmbedding` adds to the token "
        f"embeddings ({steps} positions, D = {dim}), read from the layer "
        f"with a zero token table: left the encodings, right their scaled "
        f"dot products, {similarity[0, 0]:.2f} on the diagonal and at most "
        f"{off_diagonal.max():.2f} off it, falling with the distance, so "
        f"dot-product attention can tell near positions from far ones. Our "
        f"layer puts all sines first and all cosines after "
        f"(`sin | cos` halves), where the paper interleaves them."
    )
    return Figure(
        "positions",
        "Sinusoidal position encodings",
        (path,),
        caption,
    )
