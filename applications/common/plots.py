"""Attention heatmaps as PNG files (matplotlib, no display needed)."""

import os

import matplotlib
import numpy as np
from matplotlib import pyplot as plt

from attention_zoo.export.atomic_file import atomic_write


def save_figure(fig, path, dpi=120):
    """Writes matplotlib figure `fig` as the PNG `path` (folders are
    created) and closes it. Returns `path`.

    Raises:
        attention_zoo.export.atomic_file.WriteError: `path` could not be
            written (e.g. a full disk), naming it.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        # Beside `path`, then renamed: a full disk leaves no cut PNG and
        # says so in one line (`WriteError`).
        with atomic_write(path, "wb") as f:
            fig.savefig(f, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def plot_heatmap(
    x_tokens,
    y_tokens,
    weights,
    path,
    title=None,
    x_label="",
    y_label="",
    colorbar_label=None,
):
    """Writes a heatmap PNG of attention weights in `[0, 1]`.

    Args:
        x_tokens: list of str, the columns, `len == weights.shape[1]`.
        y_tokens: list of str, the rows, `len == weights.shape[0]`.
        weights: array `(rows, columns)`.
        path: the PNG to write (folders are created).
        title: optional title.
        x_label, y_label: axis labels.
        colorbar_label: str, draws a colour bar with this label. Defaults
            to `None` (no colour bar).

    Returns:
        `path`.

    Raises:
        attention_zoo.export.atomic_file.WriteError: `path` could not be
            written (e.g. a full disk), naming it.
    """
    matplotlib.use("Agg")
    weights = np.asarray(weights, "float32")
    if weights.shape != (len(y_tokens), len(x_tokens)):
        raise ValueError(
            f"weights {weights.shape} do not match {len(y_tokens)} "
            f"row and {len(x_tokens)} column tokens"
        )
    height = 1.5 + 0.35 * len(y_tokens)
    width = 2.0 + 0.45 * len(x_tokens)
    fig, ax = plt.subplots(figsize=(width, height))
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(x_tokens)), x_tokens, rotation=90)
    ax.set_yticks(range(len(y_tokens)), y_tokens)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if title:
        ax.set_title(title)
    if colorbar_label:
        fig.colorbar(image, ax=ax, label=colorbar_label)
    return save_figure(fig, path)
