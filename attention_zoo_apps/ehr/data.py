"""Patient records: the folder layouts `load_records` reads.

`load_records` reads the long format (see `attention_zoo_apps.ehr.long_format`),
the MIMIC-IV tables (`hosp/`, `icu/`, see `attention_zoo_apps.ehr.mimic`) or
the MIMIC-III ones (`ADMISSIONS.csv.gz`, ..., see
`attention_zoo_apps.ehr.mimic3`), told apart by `detect_format`. A folder of
FHIR
R4 files (`*.ndjson` bulk-export files or Bundle `*.json`, see
`attention_zoo_apps.ehr.fhir`) is a fourth layout.

The records container and the split (`PatientRecords`, `split_patients`)
are in `attention_zoo_apps.ehr.records`, the code vocabulary and the value
scaler (`CodeVocabulary`, `ValueScaler`) in `attention_zoo_apps.ehr.encoding`;
they and the long format's loader and writer are importable from here
too.
"""

import os

from attention_zoo_apps.ehr import fhir
from attention_zoo_apps.ehr import mimic
from attention_zoo_apps.ehr import mimic3
from attention_zoo_apps.ehr.encoding import EVENT_PAD_ID
from attention_zoo_apps.ehr.encoding import OOV
from attention_zoo_apps.ehr.encoding import OOV_ID
from attention_zoo_apps.ehr.encoding import PAD
from attention_zoo_apps.ehr.encoding import CodeVocabulary
from attention_zoo_apps.ehr.encoding import ValueScaler
from attention_zoo_apps.ehr.long_format import load_long_format
from attention_zoo_apps.ehr.long_format import parse_value
from attention_zoo_apps.ehr.long_format import save_long_format
from attention_zoo_apps.ehr.records import COUNT_KEYS
from attention_zoo_apps.ehr.records import PatientRecords
from attention_zoo_apps.ehr.records import split_patients

FORMATS = ("long", "mimic", "mimic3", "fhir")
MIMIC_MARKER = os.path.join("hosp", "admissions.csv.gz")
MIMIC3_MARKER = "ADMISSIONS.csv.gz"  # or ADMISSIONS.csv
# The event padding id under its former name (not the WordPiece `PAD_ID`
# of `attention_zoo_apps.common.wordpiece`).
PAD_ID = EVENT_PAD_ID

__all__ = [
    "COUNT_KEYS",
    "EVENT_PAD_ID",
    "FORMATS",
    "MIMIC3_MARKER",
    "MIMIC_MARKER",
    "OOV",
    "OOV_ID",
    "PAD",
    "PAD_ID",
    "CodeVocabulary",
    "PatientRecords",
    "ValueScaler",
    "detect_format",
    "load_long_format",
    "load_records",
    "parse_value",
    "save_long_format",
    "split_patients",
]


def detect_format(directory):
    """`"mimic"` when `directory` holds `MIMIC_MARKER`
    (`hosp/admissions.csv.gz`), `"mimic3"` when it holds `MIMIC3_MARKER`
    (`ADMISSIONS.csv.gz` or `.csv`), `"fhir"` when it holds FHIR files
    (`*.ndjson`, or `*.json` without `events.csv`), else `"long"`."""
    directory = os.fspath(directory)
    if os.path.exists(os.path.join(directory, MIMIC_MARKER)):
        return "mimic"
    marker = os.path.join(directory, MIMIC3_MARKER)
    if os.path.exists(marker) or os.path.exists(marker[: -len(".gz")]):
        return "mimic3"
    if _holds_fhir(directory):
        return "fhir"
    return "long"


def _holds_fhir(directory):
    """Whether a folder has `*.ndjson(.gz)` files, or `*.json` ones and no
    `events.csv(.gz)` (FHIR, `"fhir"` in `detect_format`)."""
    names = os.listdir(directory) if os.path.isdir(directory) else []
    if any(n.endswith((".ndjson", ".ndjson.gz")) for n in names):
        return True
    events = {"events.csv", "events.csv.gz"} & set(names)
    return not events and any(n.endswith(".json") for n in names)


def load_records(directory, format="auto", prediction_hours=24.0):
    """The `PatientRecords` of a long-format, MIMIC-IV, MIMIC-III or FHIR
    folder.

    Args:
        directory: str or path-like.
        format: `"auto"` (see `detect_format`), `"long"`, `"mimic"`
            (MIMIC-IV), `"mimic3"` (MIMIC-III) or `"fhir"`.
            Defaults to `"auto"`.
        prediction_hours: float, MIMIC and FHIR only: the prediction time
            after admission (the Encounter's start). Defaults to `24.0`.

    Raises:
        ValueError: for an unknown `format`, a malformed file and a
            path that is a file, not a folder.
        FileNotFoundError: for a missing folder or file.
    """
    if not os.path.isdir(directory):
        if os.path.exists(directory):
            raise ValueError(
                f"{directory} is a file: records are a folder (events.csv, "
                "labels.csv, notes.csv; or MIMIC-IV's hosp/ and icu/; or "
                "MIMIC-III's ADMISSIONS.csv.gz, ...)"
            )
        raise FileNotFoundError(f"{directory}: no such folder")
    if format == "auto":
        format = detect_format(directory)
    if format not in FORMATS:
        raise ValueError(
            f"`format` must be 'auto' or one of {FORMATS}. "
            f"Received: format={format!r}"
        )
    if format == "mimic":
        return mimic.load_mimic_iv(directory, prediction_hours)
    if format == "mimic3":
        return mimic3.load_mimic_iii(directory, prediction_hours)
    if format == "fhir":
        return fhir.load_fhir(directory, prediction_hours)
    return load_long_format(directory)
