"""AUROC, AUPRC and the Brier score against hand cases and brute force;
calibration bins."""

import itertools

import numpy as np
import pytest

from attention_zoo_apps.ehr.metrics import auprc
from attention_zoo_apps.ehr.metrics import auroc
from attention_zoo_apps.ehr.metrics import brier_score
from attention_zoo_apps.ehr.metrics import calibration_bins


def _pairwise_auroc(labels, scores):
    positives = scores[labels == 1]
    negatives = scores[labels == 0]
    wins = [
        1.0 if p > n else 0.5 if p == n else 0.0
        for p, n in itertools.product(positives, negatives)
    ]
    return float(np.mean(wins))


def _brute_force_auprc(labels, scores):
    """Average precision: one threshold per distinct score, from the top."""
    total, previous_recall = 0.0, 0.0
    for threshold in sorted(set(scores.tolist()), reverse=True):
        predicted = scores >= threshold
        true_positives = np.sum(predicted & (labels == 1))
        precision = true_positives / predicted.sum()
        recall = true_positives / labels.sum()
        total += (recall - previous_recall) * precision
        previous_recall = recall
    return float(total)


def test_metrics_hand_cases():
    # The scikit-learn docs' example: AUROC 0.75, average precision 0.83.
    labels = np.array([0, 0, 1, 1])
    scores = np.array([0.1, 0.4, 0.35, 0.8])
    assert auroc(labels, scores) == pytest.approx(0.75)
    assert auprc(labels, scores) == pytest.approx(5 / 6)
    assert auroc([0, 1], [0.2, 0.9]) == 1.0
    assert auroc([1, 0], [0.2, 0.9]) == 0.0
    assert auroc([0, 1, 0, 1], [0.5] * 4) == 0.5
    assert auprc([0, 1, 0, 1], [0.5] * 4) == pytest.approx(0.5)
    assert np.isnan(auroc([1, 1], [0.1, 0.2]))
    assert np.isnan(auprc([0, 0], [0.1, 0.2]))
    assert brier_score([0, 1], [0.0, 1.0]) == 0.0
    assert brier_score([0, 1], [0.5, 0.25]) == pytest.approx(
        (0.25 + 0.5625) / 2
    )


@pytest.mark.parametrize("seed", range(4))
def test_metrics_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 40)
    labels[:2] = (0, 1)
    scores = np.round(rng.uniform(size=40), 1)  # many ties
    assert auroc(labels, scores) == pytest.approx(
        _pairwise_auroc(labels, scores)
    )
    assert auprc(labels, scores) == pytest.approx(
        _brute_force_auprc(labels, scores)
    )
    assert brier_score(labels, scores) == pytest.approx(
        np.mean((scores - labels) ** 2)
    )


def test_calibration_bins():
    labels = np.array([0, 0, 1, 1, 1])
    scores = np.array([0.05, 0.15, 0.12, 0.95, 1.0])
    table = calibration_bins(labels, scores, num_bins=10)
    assert [row["count"] for row in table] == [1, 2, 2]
    assert table[1]["low"] == pytest.approx(0.1)
    assert table[1]["mean_risk"] == pytest.approx(0.135)
    assert table[1]["observed"] == pytest.approx(0.5)
    assert table[2]["observed"] == 1.0 and table[2]["high"] == 1.0


def test_risk_model_exports_the_metrics():
    from attention_zoo_apps.ehr import metrics
    from attention_zoo_apps.ehr import risk_model

    for name in ("auroc", "auprc", "brier_score", "calibration_bins"):
        assert getattr(risk_model, name) is getattr(metrics, name)
