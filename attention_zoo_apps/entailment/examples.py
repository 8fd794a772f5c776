"""Entailment examples: the labels, the `EntailmentExamples` container and
a train / validation split that keeps premises apart.

Labels are class ids into `LABELS`; `label_id` reads a label name.
`split_examples` makes a train / validation split in which no premise
appears on both sides.
"""

import dataclasses

import numpy as np

from attention_zoo_apps.common.loaders import line_error

LABELS = ("entailment", "neutral", "contradiction")  # class id = index
NO_LABEL = "-"  # SNLI: the annotators did not agree


@dataclasses.dataclass(frozen=True)
class EntailmentExamples:
    """Premise / hypothesis pairs with their labels.

    Attributes:
        premises: list of str.
        hypotheses: list of str, line-aligned with `premises`.
        labels: list of int, class ids into `LABELS`.
        skipped: int, examples the loader dropped (SNLI's gold label
            `"-"`). Defaults to `0`.
    """

    premises: list
    hypotheses: list
    labels: list
    skipped: int = 0

    def __post_init__(self):
        lengths = {len(self.premises), len(self.hypotheses), len(self.labels)}
        if len(lengths) != 1:
            raise ValueError(
                "`premises`, `hypotheses` and `labels` must have the same "
                f"length. Received: {len(self.premises)}, "
                f"{len(self.hypotheses)} and {len(self.labels)}"
            )

    def __len__(self):
        return len(self.labels)

    def select(self, indices):
        """The examples at `indices` (ints, in that order); `skipped=0`."""
        indices = [int(i) for i in indices]
        return EntailmentExamples(
            premises=[self.premises[i] for i in indices],
            hypotheses=[self.hypotheses[i] for i in indices],
            labels=[self.labels[i] for i in indices],
        )

    def label_counts(self):
        """`{"entailment": n, "neutral": n, "contradiction": n}`."""
        counts = np.bincount(
            np.asarray(self.labels, "int64"), minlength=len(LABELS)
        )
        return {name: int(counts[i]) for i, name in enumerate(LABELS)}


def label_id(label, path=None, line_number=None):
    """The class id of a label name, case-insensitive.

    Accepts the names in `LABELS` in any case (so SICK's `ENTAILMENT`,
    `NEUTRAL`, `CONTRADICTION` too), surrounding whitespace ignored.

    Args:
        label: str.
        path: str or path-like or None, the file the label came from (for
            the error message). Defaults to `None`.
        line_number: int or None, its 1-based line. Defaults to `None`.

    Returns:
        An int in `range(len(LABELS))`.

    Raises:
        ValueError: for anything else, naming the value (and starting with
            `path:line:` when both are given).

    Example:

    >>> label_id("CONTRADICTION")
    2
    """
    name = label.strip().lower() if isinstance(label, str) else None
    if name in LABELS:
        return LABELS.index(name)
    if path is not None and line_number is not None:
        raise line_error(
            path,
            line_number,
            f"unknown label {label!r}; expected one of {LABELS} (any case)",
        )
    raise ValueError(
        f"`label` must be one of {LABELS} (any case). Received: label={label!r}"
    )


def split_examples(examples, validation_fraction=0.1, seed=0):
    """Splits examples into train and validation, grouped by premise.

    All examples with the same premise go to the same side (SNLI writes
    three hypotheses per premise), so no premise leaks from training into
    validation. Deterministic for a seed. Validation gets about
    `round(len(examples) * validation_fraction)` examples (never more; a few
    fewer when the group sizes do not add up to it): premise groups
    are taken in a seeded random order while each label stays within its
    share (`ceil(count * validation_fraction)`), so the validation labels
    follow the overall proportions, then topped up with any groups that
    fit. Within each side the original order is kept.

    Args:
        examples: an `EntailmentExamples`.
        validation_fraction: float in [0, 1). Defaults to `0.1`.
        seed: int. Defaults to `0`.

    Returns:
        A tuple `(train, validation)` of `EntailmentExamples`.
    """
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(
            "`validation_fraction` must be in [0, 1). "
            f"Received: validation_fraction={validation_fraction}"
        )
    labels = np.asarray(examples.labels, "int64")
    groups = {}  # premise -> example indices, first-seen order
    for index, premise in enumerate(examples.premises):
        groups.setdefault(premise, []).append(index)
    groups = list(groups.values())
    order = np.random.default_rng(seed).permutation(len(groups))
    target = int(round(len(labels) * validation_fraction))
    quota = np.ceil(
        np.bincount(labels, minlength=len(LABELS)) * validation_fraction
    )
    taken = np.zeros(len(LABELS))
    chosen = np.zeros(len(groups), bool)
    # First pass: groups that keep every label within its quota; second:
    # any group, to come closer to the target. Neither overshoots it.
    for strict in (True, False):
        for g in order:
            counts = np.bincount(labels[groups[g]], minlength=len(LABELS))
            if chosen[g] or taken.sum() + counts.sum() > target:
                continue
            if strict and np.any(taken + counts > quota):
                continue
            chosen[g] = True
            taken += counts
    in_validation = np.zeros(len(labels), bool)
    for g in np.flatnonzero(chosen):
        in_validation[groups[g]] = True
    return (
        examples.select(np.flatnonzero(~in_validation)),
        examples.select(np.flatnonzero(in_validation)),
    )
