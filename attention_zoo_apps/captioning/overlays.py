"""Show-attend-tell pictures: attention heatmaps over the image, one panel
per generated word (matplotlib, no display needed)."""

import math
import os
import textwrap

import matplotlib
import numpy as np
import tensorflow as tf
from matplotlib import pyplot as plt

# Each panel is PANEL_INCHES square with TITLE_INCHES above it for its word,
# under a HEADER_INCHES band for the caption, at DPI dots per inch; the
# figure is saved without cropping, so its pixel size follows from the
# number of panels (see `overlay_size`).
PANEL_INCHES = 2.0
TITLE_INCHES = 0.35
HEADER_INCHES = 0.45
DPI = 80


def word_heatmaps(tokens, heatmaps):
    """The generated tokens worth a panel and their heatmaps: `[END]`,
    the other reserved tokens and empty strings (the export's padding)
    are left out.

    Args:
        tokens: list of str (or bytes), one per heatmap.
        heatmaps: float array `(len(tokens), H, W)` or longer (rows past
            the tokens are ignored).

    Returns:
        A tuple `(words, heatmaps)`: a list of str and a float32 array
        `(len(words), H, W)`.
    """
    keep, words = [], []
    for index, token in enumerate(tokens):
        if isinstance(token, bytes):
            token = token.decode("utf-8")
        if token and not (token.startswith("[") and token.endswith("]")):
            keep.append(index)
            words.append(token)
    heatmaps = np.asarray(heatmaps, "float32")
    return words, heatmaps[keep].reshape((len(keep),) + heatmaps.shape[1:])


def overlay_grid(words, columns=5):
    """`(rows, columns)` of the panel grid for `words` words: the image
    first, then one panel per word, `columns` to a row at most."""
    panels = words + 1
    columns = max(1, min(columns, panels))
    return math.ceil(panels / columns), columns


def overlay_size(words, columns=5):
    """`(height, width)` in pixels of the PNG `plot_caption_attention`
    writes for `words` words."""
    rows, columns = overlay_grid(words, columns)
    height = HEADER_INCHES + rows * (PANEL_INCHES + TITLE_INCHES)
    return int(round(height * DPI)), int(round(columns * PANEL_INCHES * DPI))


def plot_caption_attention(
    image,
    words,
    heatmaps,
    path,
    title=None,
    columns=5,
    alpha=0.6,
    colorbar_label=None,
):
    """Writes the show-attend-tell figure of one caption as a PNG.

    Under `title` (e.g. the caption, at most two lines), the first panel is
    the image; then, for each generated word, the image with that word's
    attention heatmap drawn over it, upsampled from the `H x W` feature-map
    grid to the image with bilinear smoothing, and the word as the panel's
    title. Each heatmap is scaled to its own maximum, so a flat map shows
    as an even tint and a peaked one as a bright spot.

    Args:
        image: float array `(S, S', 3)` in `[0, 1]` (or uint8).
        words: list of str, one per heatmap (tokens as generated: a `##`
            piece or `[END]` is shown as it is).
        heatmaps: float array `(len(words), H, W)`, each summing to 1.
        path: the PNG to write (folders are created).
        title: str, the figure's title. Defaults to `None`.
        columns: int, panels per row at most. Defaults to `5`.
        alpha: float, the heatmaps' opacity. Defaults to `0.6`.
        colorbar_label: str, draws a colour bar of the scaled weights
            with this label, beside the panels. Defaults to `None` (none).

    Returns:
        `path`. The PNG is `overlay_size(len(words), columns)` pixels.
    """
    matplotlib.use("Agg")
    image = np.asarray(image)
    if image.dtype != np.uint8:
        image = np.clip(image.astype("float32"), 0.0, 1.0)
    heatmaps = np.asarray(heatmaps, "float32")
    if image.ndim != 3 or image.shape[-1] != 3:
        raise ValueError(
            f"`image` must have shape (height, width, 3). Received: "
            f"shape={image.shape}"
        )
    if heatmaps.ndim != 3 or len(heatmaps) != len(words):
        raise ValueError(
            "`heatmaps` must have shape (words, H, W) with one heatmap per "
            f"word. Received: shape={heatmaps.shape} for {len(words)} words"
        )
    rows, columns = overlay_grid(len(words), columns)
    figure_height = HEADER_INCHES + rows * (PANEL_INCHES + TITLE_INCHES)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(columns * PANEL_INCHES, figure_height),
        squeeze=False,
    )
    # Panels of PANEL_INCHES - 0.1 with TITLE_INCHES + 0.1 between rows
    # fill the figure below the header down to a 0.1 inch margin.
    figure.subplots_adjust(
        left=0.02,
        right=0.98,
        top=1.0 - (HEADER_INCHES + TITLE_INCHES) / figure_height,
        bottom=0.1 / figure_height,
        wspace=0.05,
        hspace=(TITLE_INCHES + 0.1) / (PANEL_INCHES - 0.1),
    )
    if title:
        # About 7 pixels a character at 10 points and DPI 80.
        width = max(20, int(columns * PANEL_INCHES * DPI / 7))
        figure.suptitle(
            textwrap.fill(title, width, max_lines=2, placeholder=" ..."),
            fontsize=10,
            y=1.0 - 0.05 / figure_height,
            va="top",
        )
    # The heatmap's cells stretched over the whole image: (0, 0) is the
    # top-left corner, as for the image.
    height, width = image.shape[:2]
    extent = (0, width, height, 0)
    for panel, ax in enumerate(axes.flat):
        ax.axis("off")
        if panel > len(words):
            continue
        ax.imshow(image, extent=extent)
        if panel == 0:
            continue
        weights = heatmaps[panel - 1]
        ax.imshow(
            weights / max(float(weights.max()), 1e-12),
            cmap="jet",
            alpha=alpha,
            vmin=0.0,
            vmax=1.0,
            interpolation="bilinear",
            extent=extent,
        )
        ax.set_title(words[panel - 1], fontsize=10)
    if colorbar_label:
        scale = plt.cm.ScalarMappable(plt.Normalize(0.0, 1.0), cmap="jet")
        figure.colorbar(
            scale, ax=axes.ravel().tolist(), shrink=0.8, label=colorbar_label
        )
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def plot_tokens_over_image(image, tokens, attention, path, caption=None):
    """`plot_caption_attention` for a caption as generated: `tokens` (str,
    `[END]` and empty padding included) and their heatmaps `attention`
    `(L, H, W)`, cut to the words by `word_heatmaps`.

    Args:
        image: float array `(S, S', 3)` in `[0, 1]`, or encoded image
            bytes (JPEG, PNG, ...), drawn at their own resolution.
        tokens: list of str, one per heatmap.
        attention: float array `(len(tokens), H, W)`.
        path: the PNG to write.
        caption: str, the figure's title. Defaults to `None`.

    Returns:
        `path`.
    """
    if isinstance(image, bytes):
        image = tf.io.decode_image(
            image, channels=3, expand_animations=False, dtype=tf.float32
        ).numpy()  # (height, width, 3) in [0, 1], 8- or 16-bit alike
    words, heatmaps = word_heatmaps(tokens, attention)
    return plot_caption_attention(image, words, heatmaps, path, title=caption)
