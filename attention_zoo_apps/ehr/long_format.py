"""Patient records in the long format: loading and saving.

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

import csv
import math
import os

from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.common.loaders import line_error
from attention_zoo_apps.ehr.records import COUNT_KEYS
from attention_zoo_apps.ehr.records import PatientRecords

EVENT_COLUMNS = ("patient_id", "time", "code", "value")
NOTE_COLUMNS = ("patient_id", "time", "text")
LABEL_COLUMNS = ("patient_id", "label", "prediction_time")
GROUP_COLUMN = "group_id"


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
