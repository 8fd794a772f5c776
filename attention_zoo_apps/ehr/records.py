"""`PatientRecords`, the records container, and `split_patients`.

The loaders (`attention_zoo_apps.ehr.data.load_long_format`,
`attention_zoo_apps.ehr.mimic.load_mimic_iv`) and the synthetic patients
(`attention_zoo_apps.ehr.synthetic`) all give `PatientRecords`; `split_patients`
divides them into train, validation and test by group.
"""

import collections
import dataclasses

import numpy as np

COUNT_KEYS = (
    "non_numeric_values",  # values kept as NaN
    "events_after_cutoff",  # dropped: time > prediction_time
    "notes_after_cutoff",
    "events_unlabelled",  # dropped: patient absent from labels.csv
    "notes_unlabelled",
    "empty_notes",  # dropped: text empty or only whitespace
    "patients_without_events",  # kept, with an empty sequence
    "patients_without_notes",  # kept, with note text ""
)


@dataclasses.dataclass
class PatientRecords:
    """One record per patient: events in time order, a note, a label.

    The event lists of patient `i` are parallel: `codes[i][j]` happened at
    `times[i][j]` with value `values[i][j]`.

    Attributes:
        patient_ids: list of str.
        codes: list (per patient) of lists of str, sorted by time (ties keep
            the file order).
        values: list of float64 arrays, NaN where an event has no numeric
            value.
        times: list of float64 arrays, hours since admission, ascending.
        notes: list of str, the notes up to the prediction time joined in
            time order with `"\\n"`; `""` when there are none.
        labels: int64 array of 0/1.
        prediction_times: float64 array, hours since admission.
        groups: list of str, the split unit (see `split_patients`);
            `None` means the patient ids.
        counts: dict str -> int of what the loader dropped or handled (the
            keys of `COUNT_KEYS`, plus loader-specific ones).
        names: dict code -> readable name, for the codes the data names
            (FHIR's `display`); other codes are their own name (MIMIC's
            codes are made of its labels already).
    """

    patient_ids: list
    codes: list
    values: list
    times: list
    notes: list
    labels: np.ndarray
    prediction_times: np.ndarray
    groups: list = None
    counts: dict = dataclasses.field(default_factory=dict)
    names: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.patient_ids = [str(p) for p in self.patient_ids]
        self.values = [np.asarray(v, "float64") for v in self.values]
        self.times = [np.asarray(t, "float64") for t in self.times]
        self.labels = np.asarray(self.labels, "int64").reshape(-1)
        self.prediction_times = np.asarray(
            self.prediction_times, "float64"
        ).reshape(-1)
        if self.groups is None:
            self.groups = list(self.patient_ids)
        self.groups = [str(g) for g in self.groups]
        lengths = {
            len(x)
            for x in (
                self.patient_ids,
                self.codes,
                self.values,
                self.times,
                self.notes,
                self.labels,
                self.prediction_times,
                self.groups,
            )
        }
        if len(lengths) != 1:
            raise ValueError(
                "All fields of `PatientRecords` must have one entry per "
                f"patient. Received lengths: {sorted(lengths)}"
            )
        for i, codes in enumerate(self.codes):
            if not len(codes) == len(self.values[i]) == len(self.times[i]):
                raise ValueError(
                    f"Patient {self.patient_ids[i]!r}: `codes`, `values` "
                    "and `times` must have the same length. Received: "
                    f"{len(codes)}, {len(self.values[i])}, "
                    f"{len(self.times[i])}"
                )
        if not set(np.unique(self.labels)) <= {0, 1}:
            raise ValueError("`labels` must be 0 or 1.")

    def __len__(self):
        return len(self.patient_ids)

    def select(self, indices):
        """The patients at `indices` (ints, in that order), with the same
        `names`; `counts={}`."""
        indices = [int(i) for i in indices]
        return PatientRecords(
            patient_ids=[self.patient_ids[i] for i in indices],
            codes=[list(self.codes[i]) for i in indices],
            values=[self.values[i].copy() for i in indices],
            times=[self.times[i].copy() for i in indices],
            notes=[self.notes[i] for i in indices],
            labels=self.labels[indices],
            prediction_times=self.prediction_times[indices],
            groups=[self.groups[i] for i in indices],
            names=self.names,
        )

    def label_counts(self):
        """`{0: negatives, 1: positives}`."""
        counts = np.bincount(self.labels, minlength=2)
        return {0: int(counts[0]), 1: int(counts[1])}

    @property
    def num_positives(self):
        return int(self.labels.sum())

    def num_events(self):
        """int64 array, the number of events of each patient."""
        return np.array([len(c) for c in self.codes], "int64")


def split_patients(
    records, validation_fraction=0.1, test_fraction=0.1, seed=0, by="group"
):
    """Splits records into train, validation and test, by group.

    All patients of a group (`records.groups`, e.g. the hospital stays of
    one person; with `by="patient"` each patient alone) land in one split.
    Stratified: groups with a positive patient and the others are permuted
    separately (a NumPy generator seeded with `seed`), and from each stratum
    the first `round(n * test_fraction)` groups go to test, the next
    `round(n * validation_fraction)` to validation, the rest to train.
    Within each split the original order is kept. Deterministic for a seed.

    Args:
        records: a `PatientRecords`.
        validation_fraction: float in [0, 1). Defaults to `0.1`.
        test_fraction: float in [0, 1). Defaults to `0.1`.
        seed: int. Defaults to `0`.
        by: `"group"` or `"patient"`. Defaults to `"group"`.

    Returns:
        A tuple `(train, validation, test)` of `PatientRecords`.
    """
    for name, value in (
        ("validation_fraction", validation_fraction),
        ("test_fraction", test_fraction),
    ):
        if isinstance(value, bool) or not 0.0 <= value < 1.0:
            raise ValueError(
                f"`{name}` must be in [0, 1). Received: {name}={value!r}"
            )
    if validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            "`validation_fraction + test_fraction` must be below 1. "
            f"Received: {validation_fraction} + {test_fraction}"
        )
    if by not in ("group", "patient"):
        raise ValueError(
            f"`by` must be 'group' or 'patient'. Received: by={by!r}"
        )
    keys = records.groups if by == "group" else records.patient_ids
    members = collections.defaultdict(list)  # key -> patient indices
    for index, key in enumerate(keys):
        members[key].append(index)
    groups = list(members.values())
    positive = np.array([records.labels[g].max() for g in groups], bool)
    rng = np.random.default_rng(seed)
    side = np.zeros(len(groups), "int64")  # 0 train, 1 validation, 2 test
    for stratum in (np.flatnonzero(positive), np.flatnonzero(~positive)):
        order = stratum[rng.permutation(len(stratum))]
        num_test = int(round(len(order) * test_fraction))
        num_validation = int(round(len(order) * validation_fraction))
        side[order[:num_test]] = 2
        side[order[num_test : num_test + num_validation]] = 1
    split = np.zeros(len(records), "int64")
    for g, indices in enumerate(groups):
        split[indices] = side[g]
    return tuple(records.select(np.flatnonzero(split == s)) for s in range(3))
