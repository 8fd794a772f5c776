"""In-hospital mortality from MIMIC-IV tables, as `PatientRecords`.

`load_mimic_iv(root)` reads the PhysioNet layout (`hosp/<table>.csv.gz`,
`icu/<table>.csv.gz`; the open demo is in `../shared/data/mimic-iv-demo/`)
and makes one record per hospital admission:

- patient id: `hadm_id`; group: `subject_id` (split with
  `split_patients(..., by="group")` so one person's admissions stay in one
  split); label: `hospital_expire_flag`; prediction time: `prediction_hours`
  after `admittime` (24 by default).
- Admissions that end (discharge or death) at or before the prediction time
  are excluded and counted: their outcome is known when the prediction is
  made, and the shortness of the stay would leak the label.
- Events are rows of the tables in `EVENT_TABLES` with the admission's
  `hadm_id` (rows without one, e.g. outpatient labs, are counted and
  ignored), timed in hours since `admittime` and kept up to the prediction
  time (inclusive). Events before admission (emergency department labs of
  the same `hadm_id`) keep their negative times.
- Each event is stamped with the time its content was known, so nothing
  from after the prediction time gets in: labs at `storetime` (when the
  result was stored; `charttime` if missing), microbiology orders at
  `charttime` (or the end of `chartdate` when only the day is known) and
  their organisms as separate `micro_org:` events at `storetime` (or the
  end of `storedate`). ICU inputs and procedures start at `starttime`, but
  their amount or duration is only known at `endtime`, so it is NaN when
  `endtime` is after the prediction time (counted as
  `values_hidden_until_end`).
- Codes assigned at discharge (`diagnoses_icd`, `procedures_icd`,
  `drgcodes`, `hcpcsevents`) are outcomes, not inputs: they are never read
  (`OUTCOME_TABLES`). There are no notes in the demo: notes are `""`.

Codes (`CODE_PREFIXES`), their tables and values:

| code | table | time | value |
| --- | --- | --- | --- |
| `lab:<label> (<fluid>)` | `labevents`, `d_labitems` | storetime | valuenum |
| `rx:<drug>` | `hosp/prescriptions` | starttime | dose_val_rx |
| `emar:<medication>` | `hosp/emar`, given only | charttime | NaN |
| `micro:<test_name>` | `hosp/microbiologyevents` | charttime | NaN |
| `micro_org:<org_name>` | `hosp/microbiologyevents` | storetime | NaN |
| `input:<label>` | `icu/inputevents`, `d_items` | starttime | amount |
| `output:<label>` | `icu/outputevents`, `d_items` | charttime | value |
| `icuproc:<label>` | `icu/procedureevents`, `d_items` | starttime | value |
| `transfer:<careunit>` | `hosp/transfers` | intime | NaN |

An eMAR row counts as given when its `event_txt` (without " in Other
Location") is one of `EMAR_GIVEN`: administered, started, applied and their
delayed / partial / bolus forms; "Not Given", "Flushed", "Hold Dose",
"Stopped" and the like are skipped and counted.

`read_csv`, `Clock`, `keep_admissions`, `collect_events` and `make_records`
are shared with the MIMIC-III loader, `attention_zoo_apps.ehr.mimic3`.
"""

import collections
import csv
import datetime
import gzip
import math
import os

from attention_zoo_apps.common.loaders import line_error
from attention_zoo_apps.ehr.long_format import parse_value
from attention_zoo_apps.ehr.long_format import save_long_format
from attention_zoo_apps.ehr.records import COUNT_KEYS
from attention_zoo_apps.ehr.records import PatientRecords

ADMISSIONS_TABLE = "hosp/admissions"
DICTIONARY_TABLES = ("hosp/d_labitems", "icu/d_items")
# source name -> table; read in this order (ties in time keep it).
EVENT_TABLES = {
    "transfers": "hosp/transfers",
    "labs": "hosp/labevents",
    "prescriptions": "hosp/prescriptions",
    "emar": "hosp/emar",
    "microbiology": "hosp/microbiologyevents",
    "inputs": "icu/inputevents",
    "outputs": "icu/outputevents",
    "procedures": "icu/procedureevents",
}
TABLES = (ADMISSIONS_TABLE, *DICTIONARY_TABLES, *EVENT_TABLES.values())
# Assigned at or after discharge: outcomes, never read.
OUTCOME_TABLES = (
    "hosp/diagnoses_icd",
    "hosp/procedures_icd",
    "hosp/drgcodes",
    "hosp/hcpcsevents",
)
CODE_PREFIXES = (
    "lab:",
    "rx:",
    "emar:",
    "micro:",
    "micro_org:",
    "input:",
    "output:",
    "icuproc:",
    "transfer:",
)
EMAR_GIVEN = (
    "administered",
    "delayed administered",
    "partial administered",
    "administered bolus from iv drip",
    "started",
    "delayed started",
    "restarted",
    "applied",
    "removed existing / applied new",
)


def _path(root, table):
    return os.path.join(os.fspath(root), *table.split("/")) + ".csv.gz"


def read_csv(path, columns):
    """Yields each row of a CSV table as a tuple of `columns` (str).

    Shared by the MIMIC-IV and MIMIC-III loaders. Header names are matched
    without regard to case (MIMIC-III writes them in upper case, its demo
    and MIMIC-IV in lower case); `columns` are lower case. A `.gz` path is
    decompressed. Quoted fields may span lines (notes).

    Raises:
        ValueError: `path:line: ...` for a header without a column of
            `columns`, a row of the wrong width, invalid CSV, text that is
            not UTF-8 and a gzip file that is corrupt or cut short.
    """
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as raw:
        # Decoded line by line, so an error names its line.
        reader = csv.reader(line.decode("utf-8") for line in raw)
        try:
            header = [name.strip().lower() for name in next(reader, [])]
            missing = [c for c in columns if c not in header]
            if missing:
                raise line_error(path, 1, f"the header lacks {missing}")
            index = [header.index(c) for c in columns]
            width = len(header)
            for row in reader:
                if len(row) != width:
                    raise line_error(
                        path,
                        reader.line_num,
                        f"expected {width} fields, found {len(row)}",
                    )
                yield tuple(row[i] for i in index)
        except csv.Error as error:
            raise line_error(path, reader.line_num, f"invalid CSV: {error}")
        except (UnicodeDecodeError, EOFError, OSError) as error:
            # In the line after the last one read; OSError is
            # gzip.BadGzipFile, EOFError a gzip file cut short.
            raise line_error(path, reader.line_num + 1, f"unreadable: {error}")


def _read(root, table, columns):
    """Yields each row of a gzipped table as a tuple of `columns` (str)."""
    return read_csv(_path(root, table), columns)


class Clock:
    """Timestamps (`YYYY-MM-DD HH:MM:SS`) to hours since 1970, cached."""

    def __init__(self):
        self._cache = {}

    def __call__(self, text, end_of_day=False):
        """Hours, or None for an empty text; a date-only time is moved to
        the end of its day when `end_of_day` (never earlier than the truth).
        """
        if not text:
            return None
        hours = self._cache.get(text)
        if hours is None:
            moment = datetime.datetime.fromisoformat(text)
            hours = (moment - datetime.datetime(1970, 1, 1)).total_seconds()
            hours = self._cache[text] = hours / 3600.0
        return hours + 24.0 if end_of_day else hours


def _labels(root, table, key="itemid"):
    rows = _read(root, table, (key, "label", "fluid"))
    return {item: (label, fluid) for item, label, fluid in rows}


def _items(root):
    return {
        item: label
        for item, label in _read(root, "icu/d_items", ("itemid", "label"))
    }


# Each source yields `(hadm_id, time, code, value, value_time)`: hours since
# 1970 for `time` (None: skip the row) and `value_time` (when the value is
# known, None: at `time`), `value` the raw text.


def _transfers(root, clock, counts):
    columns = ("hadm_id", "eventtype", "careunit", "intime")
    for hadm, kind, unit, intime in _read(
        root, EVENT_TABLES["transfers"], columns
    ):
        yield hadm, clock(intime), f"transfer:{unit or kind}", "", None


def _labs(root, clock, counts):
    items = _labels(root, "hosp/d_labitems")
    columns = ("hadm_id", "itemid", "charttime", "storetime", "valuenum")
    for hadm, item, charttime, storetime, value in _read(
        root, EVENT_TABLES["labs"], columns
    ):
        label, fluid = items.get(item, (item, ""))
        code = f"lab:{label} ({fluid.lower()})" if fluid else f"lab:{label}"
        yield hadm, clock(storetime or charttime), code, value, None


def _prescriptions(root, clock, counts):
    columns = ("hadm_id", "drug", "starttime", "dose_val_rx")
    for hadm, drug, start, dose in _read(
        root, EVENT_TABLES["prescriptions"], columns
    ):
        yield hadm, clock(start), f"rx:{drug.strip()}", dose, None


def _emar(root, clock, counts):
    columns = ("hadm_id", "medication", "charttime", "event_txt")
    for hadm, medication, charttime, event in _read(
        root, EVENT_TABLES["emar"], columns
    ):
        event = event.replace(" in Other Location", "").strip().lower()
        if event not in EMAR_GIVEN:
            counts["emar_not_given"] += 1
            continue
        yield hadm, clock(charttime), f"emar:{medication.strip()}", "", None


def _microbiology(root, clock, counts):
    columns = (
        "hadm_id",
        "chartdate",
        "charttime",
        "storedate",
        "storetime",
        "test_name",
        "org_name",
    )
    rows = _read(root, EVENT_TABLES["microbiology"], columns)
    for hadm, chartdate, charttime, storedate, storetime, test, org in rows:
        ordered = clock(charttime) if charttime else clock(chartdate, True)
        yield hadm, ordered, f"micro:{test.strip()}", "", None
        if org.strip():
            known = clock(storetime) if storetime else clock(storedate, True)
            yield hadm, known, f"micro_org:{org.strip()}", "", None


def _icu(source, prefix, time_column, value_column, end_column):
    def read(root, clock, counts):
        items = _items(root)
        columns = ("hadm_id", "itemid", time_column, value_column)
        columns += (end_column,) if end_column else ()
        for row in _read(root, EVENT_TABLES[source], columns):
            hadm, item, time, value = row[:4]
            value_time = clock(row[4]) if end_column else None
            code = f"{prefix}:{items.get(item, item)}"
            yield hadm, clock(time), code, value, value_time

    return read


_SOURCES = {
    "transfers": _transfers,
    "labs": _labs,
    "prescriptions": _prescriptions,
    "emar": _emar,
    "microbiology": _microbiology,
    "inputs": _icu("inputs", "input", "starttime", "amount", "endtime"),
    "outputs": _icu("outputs", "output", "charttime", "value", None),
    "procedures": _icu(
        "procedures", "icuproc", "starttime", "value", "endtime"
    ),
}
_DEDUPLICATED = ("microbiology",)  # one row per antibiotic tested


ADMISSION_COLUMNS = (
    "subject_id",
    "hadm_id",
    "admittime",
    "dischtime",
    "deathtime",
    "hospital_expire_flag",
)


def keep_admissions(rows, clock, prediction_hours, counts):
    """`{hadm_id: (subject_id, admit_hours, label)}` of the admissions that
    last beyond the prediction time; `rows` are `ADMISSION_COLUMNS` tuples.
    Counts `admissions`, `deaths` and the excluded and kept ones."""
    kept = {}
    for subject, hadm, admit, discharge, death, flag in rows:
        label = int(flag)
        counts["admissions"] += 1
        counts["deaths"] += label
        start = clock(admit)
        ends = [t for t in (clock(discharge), clock(death)) if t is not None]
        if ends and min(ends) <= start + prediction_hours:
            counts["admissions_excluded"] += 1
            counts["deaths_excluded"] += label
            continue
        kept[hadm] = (subject, start, label)
    counts["admissions_kept"] = len(kept)
    counts["deaths_kept"] = counts["deaths"] - counts["deaths_excluded"]
    return kept


def collect_events(admissions, sources, prediction_hours, counts, unique=()):
    """`{hadm_id: [(hours since admission, code, value)]}` up to the cutoff.

    Args:
        admissions: the dict of `keep_admissions`.
        sources: dict, source name -> iterable of `(hadm_id, time, code,
            value, value_time)` (see the sources above), read in order.
        prediction_hours: float.
        counts: a `collections.Counter`, updated with `events_<source>`,
            `<source>_after_cutoff`, `<source>_without_admission`,
            `<source>_without_time` and the keys of `load_mimic_iv`.
        unique: the names of `sources` whose repeats (same admission, code
            and time) are dropped and counted as `duplicates`.
    """
    events = {hadm: [] for hadm in admissions}
    for source, rows in sources.items():
        seen = set()
        for hadm, time, code, text, value_time in rows:
            if hadm not in admissions:
                counts[f"{source}_without_admission"] += 1
                continue
            if time is None:
                counts[f"{source}_without_time"] += 1
                continue
            start = admissions[hadm][1]
            cutoff = start + prediction_hours
            if time > cutoff:
                counts[f"{source}_after_cutoff"] += 1
                counts["events_after_cutoff"] += 1
                continue
            if source in unique:
                if (hadm, code, time) in seen:
                    counts["duplicates"] += 1
                    continue
                seen.add((hadm, code, time))
            value, numeric = parse_value(text)
            counts["non_numeric_values"] += not numeric
            if value_time is not None and value_time > cutoff:
                counts["values_hidden_until_end"] += not math.isnan(value)
                value = math.nan
            counts["events_before_admission"] += time < start
            counts[f"events_{source}"] += 1
            events[hadm].append((time - start, code, value))
    return events


def make_records(admissions, events, prediction_hours, counts, notes=None):
    """The `PatientRecords` of `keep_admissions` and `collect_events`, in
    the order of `admissions`; `notes` maps an admission to its note text
    (None: no notes)."""
    notes = notes or {}
    ids, codes, values, times, labels, groups, texts = (
        [],
        [],
        [],
        [],
        [],
        [],
        [],
    )
    for hadm, (subject, _, label) in admissions.items():
        rows = sorted(events.pop(hadm), key=lambda e: e[0])
        counts["patients_without_events"] += not rows
        ids.append(hadm)
        groups.append(subject)
        labels.append(label)
        codes.append([r[1] for r in rows])
        values.append([r[2] for r in rows])
        times.append([r[0] for r in rows])
        texts.append(notes.get(hadm, ""))
        counts["patients_without_notes"] += not texts[-1]
    return PatientRecords(
        patient_ids=ids,
        codes=codes,
        values=values,
        times=times,
        notes=texts,
        labels=labels,
        prediction_times=[prediction_hours] * len(ids),
        groups=groups,
        counts=dict(counts),
    )


def checked_sources(sources, tables):
    """`sources` as a list (`None`: every name of `tables`), or a
    `ValueError` naming those that are not in `tables`."""
    sources = list(tables if sources is None else sources)
    unknown = [s for s in sources if s not in tables]
    if unknown:
        raise ValueError(
            f"`sources` must be names of {list(tables)}. Received: {unknown}"
        )
    return sources


def load_mimic_iv(root, prediction_hours=24.0, sources=None):
    """One record per admission of MIMIC-IV, labelled in-hospital death.

    See the module docstring for what is read and how it is timed.

    Args:
        root: str or path-like, the folder with `hosp/` and `icu/`.
        prediction_hours: float, the prediction time after `admittime`.
            Defaults to `24.0`.
        sources: iterable of names of `EVENT_TABLES`, or None for all.
            Defaults to `None`.

    Returns:
        A `PatientRecords` in the order of `admissions.csv.gz`, times in
        hours since admission, `groups` the subject ids, notes `""`.
        `counts` holds `admissions`, `admissions_excluded`,
        `admissions_kept`, `deaths`, `deaths_kept`, `deaths_excluded`,
        `events_<source>` (kept), `<source>_after_cutoff`,
        `<source>_without_admission` (no or another `hadm_id`),
        `<source>_without_time`,
        `events_before_admission`, `values_hidden_until_end`,
        `emar_not_given`, `duplicates` and the keys of `COUNT_KEYS`.
    """
    sources = checked_sources(sources, EVENT_TABLES)
    prediction_hours = float(prediction_hours)
    clock = Clock()
    counts = collections.Counter(dict.fromkeys(COUNT_KEYS, 0))
    rows = _read(root, ADMISSIONS_TABLE, ADMISSION_COLUMNS)
    admissions = keep_admissions(rows, clock, prediction_hours, counts)
    # Generators: each table is read when its turn comes.
    streams = {s: _SOURCES[s](root, clock, counts) for s in sources}
    events = collect_events(
        admissions, streams, prediction_hours, counts, _DEDUPLICATED
    )
    return make_records(admissions, events, prediction_hours, counts)


def build_long_format(root, directory, prediction_hours=24.0):
    """Loads MIMIC-IV with `load_mimic_iv` and writes the long format.

    Returns:
        The `PatientRecords` written (`load_long_format(directory)` reads
        them back).
    """
    records = load_mimic_iv(root, prediction_hours)
    save_long_format(records, directory)
    return records
