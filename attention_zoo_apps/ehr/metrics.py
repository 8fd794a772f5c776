"""Risk metrics: AUROC, AUPRC (average precision), Brier score and
calibration bins, in NumPy (`RiskModel.evaluate` reports them)."""

import numpy as np


def auroc(labels, scores):
    """Area under the ROC curve: the chance that a random positive scores
    above a random negative, ties counting one half (Mann-Whitney U with
    average ranks). `nan` without both classes."""
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, "float64")
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores), "float64")
    # Average rank (1-based) within each run of tied scores.
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
    ends = np.r_[starts[1:], len(scores)]
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end + 1) / 2.0
    u = ranks[labels].sum() - positives * (positives + 1) / 2.0
    return float(u / (positives * negatives))


def auprc(labels, scores):
    """Area under the precision-recall curve as average precision:
    `sum_k (R_k - R_{k-1}) P_k` over the distinct score thresholds, from
    the highest (tied scores enter together). `nan` without positives."""
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, "float64")
    positives = int(labels.sum())
    if not positives:
        return float("nan")
    order = np.argsort(-scores, kind="mergesort")
    sorted_scores, sorted_labels = scores[order], labels[order]
    true_positives = np.cumsum(sorted_labels)
    # The last index of each run of tied scores: one threshold each.
    last = np.r_[np.flatnonzero(np.diff(sorted_scores)), len(scores) - 1]
    tp = true_positives[last].astype("float64")
    precision = tp / (last + 1)
    recall = tp / positives
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def brier_score(labels, scores):
    """Mean squared error of the predicted risks."""
    labels = np.asarray(labels, "float64")
    scores = np.asarray(scores, "float64")
    return float(np.mean((scores - labels) ** 2)) if len(labels) else 0.0


def calibration_bins(labels, scores, num_bins=10):
    """Reliability table over `num_bins` equal-width risk bins of [0, 1].

    Returns:
        A list of dicts, one per non-empty bin: `low`, `high` (its edges),
        `count`, `mean_risk` (mean prediction) and `observed` (fraction of
        positives).
    """
    labels = np.asarray(labels, "float64")
    scores = np.asarray(scores, "float64")
    which = np.clip((scores * num_bins).astype("int64"), 0, num_bins - 1)
    table = []
    for b in range(num_bins):
        inside = which == b
        if inside.any():
            table.append(
                {
                    "low": b / num_bins,
                    "high": (b + 1) / num_bins,
                    "count": int(inside.sum()),
                    "mean_risk": float(scores[inside].mean()),
                    "observed": float(labels[inside].mean()),
                }
            )
    return table
