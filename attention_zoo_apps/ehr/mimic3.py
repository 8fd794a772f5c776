"""In-hospital mortality from MIMIC-III tables, as `PatientRecords`.

`load_mimic_iii(root)` reads the PhysioNet layout, one `<TABLE>.csv.gz` (or
`.csv`) per table in one folder (the open demo is in
`../shared/data/mimic-iii-demo/`), with the task of
`attention_zoo_apps.ehr.mimic.load_mimic_iv`: one record per hospital admission,
patient id `HADM_ID`, group `SUBJECT_ID`, label `HOSPITAL_EXPIRE_FLAG`,
prediction time `prediction_hours` after `ADMITTIME`; admissions that end
(discharge or death) at or before it are excluded and counted. Header names
are read without regard to case (upper case in the full database, lower
case in the demo).

Events are rows of `EVENT_TABLES` with a kept `HADM_ID` (others are
counted), in hours since `ADMITTIME`, up to the prediction time
(inclusive), each stamped when its content was known:

| code | table (labels) | time | value |
| --- | --- | --- | --- |
| `chart:<label>` | `CHARTEVENTS` (`D_ITEMS`) | storetime | valuenum |
| `lab:<label> (<fluid>)` | `LABEVENTS` (`D_LABITEMS`) | charttime | valuenum |
| `rx:<drug>` | `PRESCRIPTIONS` | end of startdate | dose_val_rx |
| `micro:<specimen>` | `MICROBIOLOGYEVENTS` | charttime | NaN |
| `input:<label>` | `INPUTEVENTS_CV` (`D_ITEMS`) | storetime | amount |
| `input:<label>` | `INPUTEVENTS_MV` (`D_ITEMS`) | starttime | amount |
| `output:<label>` | `OUTPUTEVENTS` (`D_ITEMS`) | storetime | value |
| `icuproc:<label>` | `PROCEDUREEVENTS_MV` (`D_ITEMS`) | starttime | value |
| `datetime:<label>` | `DATETIMEEVENTS` (`D_ITEMS`) | storetime | NaN |
| `transfer:<careunit>` | `TRANSFERS` | intime | NaN |

- "storetime" is `STORETIME`, or `CHARTTIME` where it is empty. Rows
  flagged as errors (`ERROR` or `ISERROR` 1) are skipped and counted
  (`<source>_errors`).
- Labs: MIMIC-III records no result time, only `CHARTTIME` (about when the
  specimen was drawn), which is used; a result drawn shortly before the
  prediction time may have been reported after it (typically within an
  hour or two), the one place where the stamp can precede the knowledge.
- Prescriptions carry only a start date: they count at the end of that day
  (never earlier than the order), so those started on the day of the
  prediction time usually fall after it.
- Microbiology: the specimen (`SPEC_TYPE_DESC`) at `CHARTTIME`, or the end
  of `CHARTDATE` when only the day is known, once per specimen and time.
  MIMIC-III has no time for the results (organisms, susceptibilities),
  which come days later: they are not read.
- MetaVision inputs and procedures start at `STARTTIME`, but their amount
  or duration is known only at `ENDTIME`: NaN when that is after the
  prediction time (`values_hidden_until_end`).
- Notes (`NOTEEVENTS`, `TEXT`): known at `STORETIME`, else `CHARTTIME`,
  else the end of `CHARTDATE` (discharge summaries have only the date, so
  they always fall after the prediction time); notes known by the
  prediction time are joined in time order, those with `ISERROR` 1 skipped.

Every event table is optional: an absent one is counted as
`<source>_table_absent` (the demo has no `CHARTEVENTS`, `LABEVENTS`,
`INPUTEVENTS_CV`, and no notes). Codes assigned at discharge
(`DIAGNOSES_ICD`, `PROCEDURES_ICD`, `DRGCODES`, `CPTEVENTS`) are outcomes,
never read (`OUTCOME_TABLES`); neither are `PATIENTS` (dates of death),
`ICUSTAYS` and `CALLOUT` (discharge times and outcomes).
"""

import collections
import os

from attention_zoo_apps.ehr import mimic
from attention_zoo_apps.ehr.records import COUNT_KEYS

ADMISSIONS_TABLE = "ADMISSIONS"
DICTIONARY_TABLES = ("D_ITEMS", "D_LABITEMS")
# source name -> table; read in this order (ties in time keep it).
EVENT_TABLES = {
    "transfers": "TRANSFERS",
    "chart": "CHARTEVENTS",
    "labs": "LABEVENTS",
    "prescriptions": "PRESCRIPTIONS",
    "microbiology": "MICROBIOLOGYEVENTS",
    "inputs_cv": "INPUTEVENTS_CV",
    "inputs_mv": "INPUTEVENTS_MV",
    "outputs": "OUTPUTEVENTS",
    "procedures": "PROCEDUREEVENTS_MV",
    "datetime": "DATETIMEEVENTS",
}
NOTES_TABLE = "NOTEEVENTS"
TABLES = (
    ADMISSIONS_TABLE,
    *DICTIONARY_TABLES,
    *EVENT_TABLES.values(),
    NOTES_TABLE,
)
# Assigned at or after discharge: outcomes, never read.
OUTCOME_TABLES = ("DIAGNOSES_ICD", "PROCEDURES_ICD", "DRGCODES", "CPTEVENTS")
CODE_PREFIXES = (
    "chart:",
    "lab:",
    "rx:",
    "micro:",
    "input:",
    "output:",
    "icuproc:",
    "datetime:",
    "transfer:",
)


def find_table(root, table):
    """The path of `<table>.csv.gz` or `<table>.csv` (upper or lower case)
    in `root`, or None."""
    for name in (table, table.lower()):
        for suffix in (".csv.gz", ".csv"):
            path = os.path.join(os.fspath(root), name + suffix)
            if os.path.isfile(path):
                return path
    return None


def _read(root, table, columns):
    path = find_table(root, table)
    if path is None:
        raise FileNotFoundError(
            f"{os.path.join(os.fspath(root), table)}.csv(.gz) not found"
        )
    return mimic.read_csv(path, columns)


def _items(root):
    rows = _read(root, "D_ITEMS", ("itemid", "label"))
    return {item: label or item for item, label in rows}


def _lab_items(root):
    rows = _read(root, "D_LABITEMS", ("itemid", "label", "fluid"))
    return {item: (label or item, fluid) for item, label, fluid in rows}


# Each source yields `(hadm_id, time, code, value, value_time)` like those of
# `attention_zoo_apps.ehr.mimic`: hours since 1970 (`time` None: the row is
# skipped; `value_time` None: the value is known at `time`), raw text value.


def _erroneous(flag, source, counts):
    if flag.strip() == "1":
        counts[f"{source}_errors"] += 1
        return True
    return False


def _stored(source, prefix, value_column=None, error_column=None):
    """Rows known at `storetime` (else `charttime`), labelled by `D_ITEMS`,
    valued by `value_column` (None: NaN)."""

    def read(root, clock, counts):
        items = _items(root)
        extra = tuple(c for c in (value_column, error_column) if c)
        columns = ("hadm_id", "itemid", "charttime", "storetime", *extra)
        for row in _read(root, EVENT_TABLES[source], columns):
            hadm, item, charttime, storetime = row[:4]
            if error_column and _erroneous(row[-1], source, counts):
                continue
            value = row[4] if value_column else ""
            time = clock(storetime or charttime)
            yield hadm, time, f"{prefix}:{items.get(item, item)}", value, None

    return read


def _labs(root, clock, counts):
    items = _lab_items(root)
    columns = ("hadm_id", "itemid", "charttime", "valuenum")
    for hadm, item, charttime, value in _read(root, "LABEVENTS", columns):
        label, fluid = items.get(item, (item, ""))
        code = f"lab:{label} ({fluid.lower()})" if fluid else f"lab:{label}"
        yield hadm, clock(charttime), code, value, None


def _prescriptions(root, clock, counts):
    columns = ("hadm_id", "drug", "startdate", "dose_val_rx")
    for hadm, drug, start, dose in _read(root, "PRESCRIPTIONS", columns):
        yield hadm, clock(start, True), f"rx:{drug.strip()}", dose, None


def _microbiology(root, clock, counts):
    columns = ("hadm_id", "chartdate", "charttime", "spec_type_desc")
    rows = _read(root, "MICROBIOLOGYEVENTS", columns)
    for hadm, chartdate, charttime, specimen in rows:
        time = clock(charttime) if charttime else clock(chartdate, True)
        yield hadm, time, f"micro:{specimen.strip()}", "", None


def _metavision(source, prefix, value_column):
    """Rows from `starttime` whose value is known at `endtime`."""

    def read(root, clock, counts):
        items = _items(root)
        columns = ("hadm_id", "itemid", "starttime", "endtime", value_column)
        for hadm, item, start, end, value in _read(
            root, EVENT_TABLES[source], columns
        ):
            code = f"{prefix}:{items.get(item, item)}"
            yield hadm, clock(start), code, value, clock(end)

    return read


def _transfers(root, clock, counts):
    columns = ("hadm_id", "eventtype", "curr_careunit", "intime")
    for hadm, kind, unit, intime in _read(root, "TRANSFERS", columns):
        yield hadm, clock(intime), f"transfer:{unit or kind}", "", None


_SOURCES = {
    "transfers": _transfers,
    "chart": _stored("chart", "chart", "valuenum", "error"),
    "labs": _labs,
    "prescriptions": _prescriptions,
    "microbiology": _microbiology,
    "inputs_cv": _stored("inputs_cv", "input", "amount"),
    "inputs_mv": _metavision("inputs_mv", "input", "amount"),
    "outputs": _stored("outputs", "output", "value", "iserror"),
    "procedures": _metavision("procedures", "icuproc", "value"),
    "datetime": _stored("datetime", "datetime", error_column="error"),
}
_DEDUPLICATED = ("microbiology",)  # one row per organism and antibiotic


def _notes(root, admissions, clock, prediction_hours, counts):
    """`{hadm_id: text}`: the notes known by the prediction time."""
    columns = ("hadm_id", "chartdate", "charttime", "storetime", "iserror")
    columns += ("text",)
    kept = collections.defaultdict(list)  # hadm_id -> [(hours, text)]
    for hadm, chartdate, charttime, storetime, error, text in _read(
        root, NOTES_TABLE, columns
    ):
        if hadm not in admissions:
            counts["notes_without_admission"] += 1
            continue
        if _erroneous(error, "notes", counts):
            continue
        if not text.strip():
            counts["empty_notes"] += 1
            continue
        time = clock(storetime or charttime) or clock(chartdate, True)
        if time is None:
            counts["notes_without_time"] += 1
        elif time > admissions[hadm][1] + prediction_hours:
            counts["notes_after_cutoff"] += 1
        else:
            kept[hadm].append((time, text.strip()))
            counts["notes"] += 1
    return {
        hadm: "\n".join(text for _, text in sorted(rows, key=lambda n: n[0]))
        for hadm, rows in kept.items()
    }


def load_mimic_iii(root, prediction_hours=24.0, sources=None, notes=True):
    """One record per admission of MIMIC-III, labelled in-hospital death.

    See the module docstring for what is read and how it is timed.

    Args:
        root: str or path-like, the folder with `ADMISSIONS.csv.gz`.
        prediction_hours: float, the prediction time after `ADMITTIME`.
            Defaults to `24.0`.
        sources: iterable of names of `EVENT_TABLES`, or None for all.
            Defaults to `None`.
        notes: bool, read `NOTEEVENTS`. Defaults to `True`.

    Returns:
        A `PatientRecords` in the order of `ADMISSIONS`, times in hours
        since admission, `groups` the subject ids. `counts` holds those of
        `load_mimic_iv` (without `emar_not_given`), plus
        `<source>_table_absent`, `<source>_errors`, `notes` (kept),
        `notes_without_admission`, `notes_without_time`, `notes_errors`.

    Raises:
        FileNotFoundError: without `ADMISSIONS`, or `D_ITEMS` /
            `D_LABITEMS` when a table they label is present.
        ValueError: `path:line: ...` for a malformed row or header.
    """
    sources = mimic.checked_sources(sources, EVENT_TABLES)
    prediction_hours = float(prediction_hours)
    clock = mimic.Clock()
    counts = collections.Counter(dict.fromkeys(COUNT_KEYS, 0))
    rows = _read(root, ADMISSIONS_TABLE, mimic.ADMISSION_COLUMNS)
    admissions = mimic.keep_admissions(rows, clock, prediction_hours, counts)
    streams = {}
    for source in sources:
        if find_table(root, EVENT_TABLES[source]) is None:
            counts[f"{source}_table_absent"] = 1
        else:  # a generator: the table is read when its turn comes
            streams[source] = _SOURCES[source](root, clock, counts)
    events = mimic.collect_events(
        admissions, streams, prediction_hours, counts, _DEDUPLICATED
    )
    texts = None
    if notes and find_table(root, NOTES_TABLE) is None:
        counts["notes_table_absent"] = 1
    elif notes:
        texts = _notes(root, admissions, clock, prediction_hours, counts)
    return mimic.make_records(
        admissions, events, prediction_hours, counts, texts
    )
