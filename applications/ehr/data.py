"""Patient records in a long format: loading, saving, splits, vocabularies.

The long format is three CSV files in one directory (each may also be
gzipped, `.csv.gz`), with a header row naming the columns (extra columns are
ignored, their order is free):

- `events.csv`: `patient_id, time, code, value`. `time` is a number, hours
  since admission (negative for events before it, e.g. in the emergency
  department). `code` is any non-empty string (`lab:lactate`,
  `rx:heparin`). `value` is a number, or empty when the event has none; a
  value that is not a number is kept as NaN and counted, not an error.
- `notes.csv` (optional): `patient_id, time, text`, `time` as above.
- `labels.csv`: `patient_id, label, prediction_time`, plus an optional
  `group_id` (e.g. the person when a patient id is one hospital stay, so
  splits keep a person's stays together; defaults to the patient id).
  `label` is `0` or `1`; `prediction_time` is in hours since admission.

Only the events and notes with `time <= prediction_time` are kept: the
boundary is inclusive, an event at exactly the prediction time is known when
the prediction is made. Later rows are dropped and counted, so no later event
can change a record. Events and notes of patients absent from `labels.csv`
are counted and ignored. Malformed rows (wrong column count, a time that is
not a number, a label other than `0`/`1`, a missing header column, an empty
patient id or code, a header naming a column twice, a line that is not
UTF-8, a patient twice in `labels.csv`) raise a `ValueError` starting with
`path:line:`; a missing events or labels file a `FileNotFoundError`.
"""

import collections
import csv
import dataclasses
import json
import math
import os

import numpy as np

from applications.common.loaders import iter_lines
from applications.common.loaders import line_error

EVENT_COLUMNS = ("patient_id", "time", "code", "value")
NOTE_COLUMNS = ("patient_id", "time", "text")
LABEL_COLUMNS = ("patient_id", "label", "prediction_time")
GROUP_COLUMN = "group_id"
PAD_ID = 0  # padding of event sequences
OOV_ID = 1  # codes not in the vocabulary
PAD = "<pad>"
OOV = "<oov>"
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
        """The patients at `indices` (ints, in that order); `counts={}`."""
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


def _csv_rows(path, required):
    """Yields `(line_number, dict)` for the data rows of a CSV file.

    Checks the header names every column of `required` and none of the
    columns read twice, and each row has as many fields as the header.
    Blank lines are skipped; quoted fields may span lines (the line number
    is then the record's last line).
    """
    lines = iter_lines(path, skip_blank=False)
    reader = csv.reader(text + "\n" for _, text in lines)
    header = None
    try:
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if header is None:
                header = [name.strip() for name in row]
                read = (*required, GROUP_COLUMN)
                twice = [c for c in read if header.count(c) > 1]
                if twice:
                    raise line_error(
                        path,
                        reader.line_num,
                        f"the header names the column(s) {twice} more "
                        f"than once: {header}",
                    )
                missing = [c for c in required if c not in header]
                if missing:
                    raise line_error(
                        path,
                        reader.line_num,
                        f"the header lacks the column(s) {missing}; "
                        f"expected {list(required)}, found {header}",
                    )
                continue
            if len(row) != len(header):
                raise line_error(
                    path,
                    reader.line_num,
                    f"expected {len(header)} comma-separated fields, found "
                    f"{len(row)}: {','.join(row)[:80]!r}",
                )
            yield reader.line_num, dict(zip(header, row))
    except csv.Error as error:
        raise line_error(path, reader.line_num, f"invalid CSV: {error}")
    if header is None:
        raise line_error(path, 1, f"no header; expected {list(required)}")


def _number(text, path, line_number, column):
    """A finite float from `text`, or a `path:line:` error naming `column`."""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise line_error(
            path, line_number, f"`{column}` must be a number, found {text!r}"
        )
    return number


def _text(row, column, path, line_number):
    text = row[column].strip()
    if not text:
        raise line_error(path, line_number, f"`{column}` is empty")
    return text


def parse_value(text):
    """`(float, numeric)`: NaN for empty or non-numeric text.

    `numeric` is `False` only for non-empty text that is not a finite number
    (what the loaders count as `non_numeric_values`).
    """
    text = text.strip()
    if not text:
        return math.nan, True
    try:
        value = float(text)
    except ValueError:
        return math.nan, False
    if not math.isfinite(value):
        return math.nan, False
    return value, True


def _find(directory, name, required=True):
    for suffix in (".csv", ".csv.gz"):
        path = os.path.join(directory, name + suffix)
        if os.path.exists(path):
            return path
    if required:
        raise FileNotFoundError(
            f"{os.path.join(directory, name)}.csv(.gz) not found"
        )
    return None


def _read_labels(path):
    order, labels, cutoffs, groups = [], {}, {}, {}
    for line_number, row in _csv_rows(path, LABEL_COLUMNS):
        patient = _text(row, "patient_id", path, line_number)
        if patient in labels:
            raise line_error(
                path, line_number, f"duplicate patient_id {patient!r}"
            )
        label = row["label"].strip()
        if label not in ("0", "1"):
            raise line_error(
                path, line_number, f"`label` must be 0 or 1, found {label!r}"
            )
        order.append(patient)
        labels[patient] = int(label)
        cutoffs[patient] = _number(
            row["prediction_time"], path, line_number, "prediction_time"
        )
        group = row.get(GROUP_COLUMN, "").strip()
        groups[patient] = group or patient
    return order, labels, cutoffs, groups


def load_long_format(directory=None, events=None, notes=None, labels=None):
    """Reads the long format (see the module docstring) into records.

    Args:
        directory: str or path-like or None, holding `events.csv`,
            `labels.csv` and optionally `notes.csv` (or their `.csv.gz`).
        events: path or None, overrides `<directory>/events.csv`.
        notes: path or None, overrides `<directory>/notes.csv`.
        labels: path or None, overrides `<directory>/labels.csv`.

    Returns:
        A `PatientRecords` in the order of `labels.csv`, with events and
        notes up to each prediction time (inclusive) and `counts` filled.

    Raises:
        ValueError: `path:line: ...` for a malformed row or header.
        FileNotFoundError: for a missing events or labels file.
    """
    if directory is not None:
        directory = os.fspath(directory)
        events = events or _find(directory, "events")
        labels = labels or _find(directory, "labels")
        notes = notes or _find(directory, "notes", required=False)
    if events is None or labels is None:
        raise ValueError("Pass `directory`, or both `events` and `labels`.")
    order, label_of, cutoff_of, group_of = _read_labels(labels)
    counts = dict.fromkeys(COUNT_KEYS, 0)
    rows = {patient: [] for patient in order}  # (time, code, value)
    for line_number, row in _csv_rows(events, EVENT_COLUMNS):
        patient = _text(row, "patient_id", events, line_number)
        time = _number(row["time"], events, line_number, "time")
        code = _text(row, "code", events, line_number)
        value, numeric = parse_value(row["value"])
        counts["non_numeric_values"] += not numeric
        if patient not in rows:
            counts["events_unlabelled"] += 1
        elif time > cutoff_of[patient]:
            counts["events_after_cutoff"] += 1
        else:
            rows[patient].append((time, code, value))
    texts = {patient: [] for patient in order}  # (time, text)
    if notes is not None:
        for line_number, row in _csv_rows(notes, NOTE_COLUMNS):
            patient = _text(row, "patient_id", notes, line_number)
            time = _number(row["time"], notes, line_number, "time")
            text = row["text"].strip()
            if patient not in texts:
                counts["notes_unlabelled"] += 1
            elif not text:
                counts["empty_notes"] += 1
            elif time > cutoff_of[patient]:
                counts["notes_after_cutoff"] += 1
            else:
                texts[patient].append((time, text))
    codes, values, times, joined = [], [], [], []
    for patient in order:
        events_of = sorted(rows.pop(patient), key=lambda e: e[0])  # stable
        counts["patients_without_events"] += not events_of
        codes.append([e[1] for e in events_of])
        values.append([e[2] for e in events_of])
        times.append([e[0] for e in events_of])
        notes_of = sorted(texts.pop(patient), key=lambda n: n[0])
        counts["patients_without_notes"] += not notes_of
        joined.append("\n".join(text for _, text in notes_of))
    return PatientRecords(
        patient_ids=order,
        codes=codes,
        values=values,
        times=times,
        notes=joined,
        labels=[label_of[p] for p in order],
        prediction_times=[cutoff_of[p] for p in order],
        groups=[group_of[p] for p in order],
        counts=counts,
    )


def _number_text(value):
    return "" if math.isnan(value) else repr(float(value))


def save_long_format(records, directory):
    """Writes records as `events.csv`, `notes.csv` and `labels.csv`.

    `load_long_format(directory)` gives the records back (with fresh
    `counts`). Each non-empty note is one row at the patient's prediction
    time (the records keep no note times). Existing files are overwritten.

    Args:
        records: a `PatientRecords`.
        directory: str or path-like, created if missing.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "events.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(EVENT_COLUMNS)
        for i, patient in enumerate(records.patient_ids):
            for code, value, time in zip(
                records.codes[i], records.values[i], records.times[i]
            ):
                writer.writerow(
                    (patient, repr(float(time)), code, _number_text(value))
                )
    with open(os.path.join(directory, "notes.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(NOTE_COLUMNS)
        for i, patient in enumerate(records.patient_ids):
            if records.notes[i].strip():
                time = repr(float(records.prediction_times[i]))
                writer.writerow((patient, time, records.notes[i]))
    with open(os.path.join(directory, "labels.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow((*LABEL_COLUMNS, GROUP_COLUMN))
        for i, patient in enumerate(records.patient_ids):
            cutoff = repr(float(records.prediction_times[i]))
            label = int(records.labels[i])
            writer.writerow((patient, label, cutoff, records.groups[i]))


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


class CodeVocabulary:
    """Maps event codes to ids: `PAD_ID = 0`, `OOV_ID = 1`, then codes.

    Codes seen at least `min_count` times in the training records get ids
    from 2, most frequent first (ties alphabetical); any other code encodes
    to `OOV_ID`.

    Args:
        codes: iterable of str, the vocabulary after the two reserved
            entries, in id order.

    Example:

    >>> vocabulary = CodeVocabulary(["lab:lactate", "rx:heparin"])
    >>> vocabulary.encode(["rx:heparin", "never:seen"]).tolist()
    [3, 1]
    """

    def __init__(self, codes):
        self.codes = [PAD, OOV, *codes]
        self._ids = {code: i for i, code in enumerate(self.codes)}
        if len(self._ids) != len(self.codes):
            raise ValueError("`codes` must not repeat or hold the reserved.")

    @classmethod
    def build(cls, records, min_count=1, max_size=None):
        """The vocabulary of `records` (training records only).

        Args:
            records: a `PatientRecords`, or an iterable of code lists.
            min_count: int, fewer occurrences map to OOV. Defaults to `1`.
            max_size: int or None, the most ids in all (with PAD and OOV).
                Defaults to `None` (no limit).
        """
        lists = (
            records.codes if isinstance(records, PatientRecords) else records
        )
        counter = collections.Counter()
        for codes in lists:
            counter.update(codes)
        kept = sorted(
            (c for c, n in counter.items() if n >= min_count),
            key=lambda c: (-counter[c], c),
        )
        if max_size is not None:
            kept = kept[: max(0, max_size - 2)]
        return cls(kept)

    def __len__(self):
        return len(self.codes)

    def __contains__(self, code):
        return code in self._ids and self._ids[code] > OOV_ID

    def encode(self, codes):
        """int32 array of ids; unknown codes give `OOV_ID`."""
        return np.array([self._ids.get(c, OOV_ID) for c in codes], "int32")

    def decode(self, ids):
        """list of str, the codes of `ids`."""
        return [self.codes[int(i)] for i in ids]

    def save(self, path):
        """Writes one code a line, in id order (the reserved ones first)."""
        for code in self.codes:
            if "\n" in code or "\r" in code:
                raise ValueError(f"A code holds a line break: {code!r}")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(code + "\n" for code in self.codes))

    @classmethod
    def load(cls, path):
        """Reads a file written by `save`."""
        codes = [text for _, text in iter_lines(path, skip_blank=False)]
        if codes[:2] != [PAD, OOV]:
            raise line_error(path, 1, f"expected {PAD!r} then {OOV!r}")
        return cls(codes[2:])


class ValueScaler:
    """Standardises event values per code, with mean and std from training.

    `transform` gives `(value - mean[code]) / std[code]`, clipped to
    `[-clip, clip]`, and 0 where the value is NaN or the code has no numeric
    values in training; with it an indicator, 1.0 where the event had a
    finite value.

    Args:
        stats: dict code -> `(mean, std)`.
        clip: float. Defaults to `5.0`.
    """

    def __init__(self, stats=None, clip=5.0):
        stats = stats or {}
        self.stats = {c: (float(m), float(s)) for c, (m, s) in stats.items()}
        self.clip = float(clip)

    @classmethod
    def fit(cls, records, clip=5.0):
        """Per-code mean and std (1 where it is 0) of the finite values."""
        sums = collections.defaultdict(lambda: np.zeros(3))  # n, sum, sum sq
        for codes, values in zip(records.codes, records.values):
            for code, value in zip(codes, values):
                if np.isfinite(value):
                    sums[code] += (1.0, value, value * value)
        stats = {}
        for code, (n, total, squares) in sums.items():
            mean = total / n
            std = math.sqrt(max(squares / n - mean * mean, 0.0))
            stats[code] = (mean, std if std > 1e-6 else 1.0)
        return cls(stats, clip=clip)

    def transform(self, codes, values):
        """Two float32 arrays: scaled values, and 1/0 finite-value flags."""
        values = np.asarray(values, "float64")
        present = np.isfinite(values)
        scaled = np.zeros(len(values), "float64")
        for j, code in enumerate(codes):
            if present[j] and code in self.stats:
                mean, std = self.stats[code]
                scaled[j] = (values[j] - mean) / std
        scaled = np.clip(scaled, -self.clip, self.clip)
        return scaled.astype("float32"), present.astype("float32")

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"clip": self.clip, "stats": self.stats}, f, indent=1)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        return cls(config["stats"], clip=config["clip"])
