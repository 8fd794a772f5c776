"""Held-out metrics and attention pictures for translation."""

import re

import numpy as np
from sacrebleu.metrics import BLEU
from sacrebleu.metrics import CHRF

from attention_zoo_apps.common.plots import plot_heatmap
from attention_zoo_apps.translation.placeholders import PATTERN


# A placeholder token `⦅0⦆` as a picture labels it, `<0>`: matplotlib's
# font (DejaVu Sans) has no `⦅`, which it would draw as a box.
def _shown(token):
    return re.sub(PATTERN, lambda m: f"<{m.group(0)[1:-1]}>", token)


def corpus_scores(hypotheses, references):
    """sacreBLEU's corpus BLEU and chrF of `hypotheses` against one
    reference each (lists of str): `bleu` and `chrf`, the standard cased
    scores; `bleu_lowercase` and `chrf_lowercase`, both sides lower-cased;
    `bleu_signature`, for papers."""
    references = [list(references)]
    bleu = BLEU()
    return {
        "bleu": bleu.corpus_score(hypotheses, references).score,
        "bleu_lowercase": BLEU(lowercase=True)
        .corpus_score(hypotheses, references)
        .score,
        "chrf": CHRF().corpus_score(hypotheses, references).score,
        "chrf_lowercase": CHRF(lowercase=True)
        .corpus_score(hypotheses, references)
        .score,
        "bleu_signature": str(bleu.get_signature()),
    }


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


def plot_attention(
    source_tokens, target_tokens, weights, path, title=None, colorbar_label=None
):
    """Writes a heatmap PNG: source tokens across, target tokens down.

    Args:
        source_tokens: list of str, `len == weights.shape[1]`.
        target_tokens: list of str, `len == weights.shape[0]`.
        weights: array `(target, source)`.
        path: the PNG to write.
        title: optional title.
        colorbar_label: str, draws a colour bar with this label. Defaults
            to `None` (no colour bar).

    Returns:
        `path`.
    """
    return plot_heatmap(
        [_shown(token) for token in source_tokens],
        [_shown(token) for token in target_tokens],
        weights,
        path,
        title=title,
        x_label="source",
        y_label="translation",
        colorbar_label=colorbar_label,
    )
