"""Entailment examples: labels, the examples container, the grouped split."""

import numpy as np
import pytest

from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.examples import EntailmentExamples
from attention_zoo_apps.entailment.examples import label_id
from attention_zoo_apps.entailment.examples import split_examples


@pytest.mark.parametrize(
    "label, expected",
    [
        ("entailment", 0),
        ("neutral", 1),
        ("contradiction", 2),
        ("ENTAILMENT", 0),
        ("Neutral", 1),
        (" CONTRADICTION\r", 2),
    ],
)
def test_label_id_is_case_insensitive(label, expected):
    assert label_id(label) == expected
    assert LABELS[expected] == label.strip().lower()


@pytest.mark.parametrize("label", ["entails", "-", "", 1, None])
def test_label_id_rejects_other_values(label):
    with pytest.raises(ValueError, match=f"label={label!r}"):
        label_id(label)
    with pytest.raises(ValueError, match=r"^f\.txt:3: unknown label"):
        label_id(label, "f.txt", 3)


def test_examples_select_and_count():
    examples = EntailmentExamples(
        ["p0", "p1", "p2", "p3"], ["h0", "h1", "h2", "h3"], [2, 0, 2, 1], 5
    )
    assert len(examples) == 4
    assert examples.label_counts() == {
        "entailment": 1,
        "neutral": 1,
        "contradiction": 2,
    }
    subset = examples.select(np.array([3, 0]))
    assert subset.premises == ["p3", "p0"]
    assert subset.hypotheses == ["h3", "h0"]
    assert subset.labels == [1, 2]
    assert subset.skipped == 0
    assert subset.label_counts() == {
        "entailment": 0,
        "neutral": 1,
        "contradiction": 1,
    }
    with pytest.raises(ValueError, match="same length"):
        EntailmentExamples(["p"], ["h", "h"], [0])


def _grouped_examples():
    """60 premises with 1 to 3 hypotheses each, labels 2:1:1."""
    premises, hypotheses, labels = [], [], []
    for p in range(60):
        for h in range(1 + p % 3):
            premises.append(f"premise {p}")
            hypotheses.append(f"hypothesis {p} {h}")
            labels.append([0, 0, 1, 2][(p + h) % 4])
    return EntailmentExamples(premises, hypotheses, labels)


def test_split_examples_groups_premises_and_keeps_proportions():
    examples = _grouped_examples()
    train, validation = split_examples(examples, 0.2, seed=3)
    assert not set(train.premises) & set(validation.premises)
    assert len(train) + len(validation) == len(examples)
    assert 22 <= len(validation) <= round(0.2 * len(examples)) == 24
    pairs = set(zip(examples.premises, examples.hypotheses, examples.labels))
    for part in (train, validation):
        assert set(zip(part.premises, part.hypotheses, part.labels)) <= pairs
        # Original order kept.
        order = [examples.hypotheses.index(h) for h in part.hypotheses]
        assert order == sorted(order)
    counts = examples.label_counts()
    for name, count in validation.label_counts().items():
        assert abs(count - 0.2 * counts[name]) <= 1.5, (name, count)
    again = split_examples(examples, 0.2, seed=3)
    assert again == (train, validation)
    other = split_examples(examples, 0.2, seed=4)[1]
    assert other.premises != validation.premises
    empty = split_examples(examples, 0.0)[1]
    assert len(empty) == 0
    with pytest.raises(ValueError, match="validation_fraction=1.0"):
        split_examples(examples, 1.0)
