"""Attention heatmaps as PNG files (matplotlib, no display needed)."""

import io
import os

import matplotlib
import numpy as np
from matplotlib import pyplot as plt

from attention_zoo.export.atomic_file import atomic_write

# The largest side of a heatmap, in inches, and the most labels on an axis.
MAX_INCHES = 16.0
MAX_TICKS = 40


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
    fig = heatmap_figure(
        x_tokens,
        y_tokens,
        weights,
        title,
        x_label,
        y_label,
        colorbar_label=colorbar_label,
    )
    return save_figure(fig, path)


def heatmap_png(*args, dpi=120, **kwargs):
    """The PNG bytes of `heatmap_figure(*args, **kwargs)`, at `dpi` dots
    per inch."""
    fig = heatmap_figure(*args, **kwargs)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return buffer.getvalue()


def heatmap_figure(
    x_tokens,
    y_tokens,
    weights,
    title=None,
    x_label="",
    y_label="",
    vmax=1.0,
    colorbar_label=None,
):
    """The matplotlib figure of `plot_heatmap` (its arguments but `path`),
    the colours from 0 to `vmax`.

    A wide matrix (an image's cells, a record's events) is drawn at most
    `MAX_INCHES` wide, its column labels thinned to `MAX_TICKS`.
    """
    matplotlib.use("Agg")
    weights = np.asarray(weights, "float32")
    if weights.shape != (len(y_tokens), len(x_tokens)):
        raise ValueError(
            f"weights {weights.shape} do not match {len(y_tokens)} "
            f"row and {len(x_tokens)} column tokens"
        )
    height = min(1.5 + 0.35 * len(y_tokens), MAX_INCHES)
    width = min(2.0 + 0.45 * len(x_tokens), MAX_INCHES)
    fig, ax = plt.subplots(figsize=(width, height))
    image = ax.imshow(
        weights, cmap="viridis", vmin=0.0, vmax=vmax, aspect="auto"
    )
    for axis, tokens, rotation in (
        (ax.xaxis, x_tokens, 90),
        (ax.yaxis, y_tokens, 0),
    ):
        every = max(1, -(-len(tokens) // MAX_TICKS))  # one label in `every`
        ticks = range(0, len(tokens), every)
        axis.set_ticks(ticks, [tokens[i] for i in ticks], rotation=rotation)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if title:
        ax.set_title(title)
    if colorbar_label:
        fig.colorbar(image, ax=ax, label=colorbar_label)
    return fig
