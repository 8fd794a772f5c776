"""Held-out metrics and attention pictures for translation."""

import os

import numpy as np


def alignment_accuracy(attention_maps, alignments):
    """Share of target words whose attention argmax is their true source word.

    Args:
        attention_maps: list of arrays `(target_tokens, source_tokens)` as
            returned by `Translator.translate(..., return_attention=True)`.
        alignments: list of lists: for target position `j`, the source
            token position it translates (for the synthetic pair, whose
            words are single tokens and whose sources have no START, the
            word positions of `SyntheticPairs.alignments`).

    Returns:
        A float in `[0, 1]`; target positions beyond what was generated
        count as misses.
    """
    hits = total = 0
    for weights, alignment in zip(attention_maps, alignments):
        for j, i in enumerate(alignment):
            total += 1
            if j < len(weights) and int(np.argmax(weights[j])) == i:
                hits += 1
    return hits / max(total, 1)


def plot_attention(source_tokens, target_tokens, weights, path, title=None):
    """Writes a heatmap PNG: source tokens across, target tokens down.

    Args:
        source_tokens: list of str, `len == weights.shape[1]`.
        target_tokens: list of str, `len == weights.shape[0]`.
        weights: array `(target, source)`.
        path: the PNG to write.
        title: optional title.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    weights = np.asarray(weights, "float32")
    if weights.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(
            f"weights {weights.shape} do not match {len(target_tokens)} "
            f"target and {len(source_tokens)} source tokens"
        )
    height = 1.5 + 0.35 * len(target_tokens)
    width = 2.0 + 0.45 * len(source_tokens)
    fig, ax = plt.subplots(figsize=(width, height))
    ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(source_tokens)), source_tokens, rotation=90)
    ax.set_yticks(range(len(target_tokens)), target_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("translation")
    if title:
        ax.set_title(title)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
