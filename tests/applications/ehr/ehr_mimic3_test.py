"""The MIMIC-III loader: the demo's counts, the cutoff, the tables read, the
labels of codes, and hand-written edge cases."""

import builtins
import csv
import datetime
import functools
import gzip
import math
import os
import re

import numpy as np
import pytest

from attention_zoo_apps.ehr import data
from attention_zoo_apps.ehr import mimic3


@functools.lru_cache(maxsize=1)
def _load(root):
    return mimic3.load_mimic_iii(root)  # once for the module (a second)


@pytest.fixture
def demo_root(shared_data):
    root = shared_data / "mimic-iii-demo"
    if not (root / "ADMISSIONS.csv.gz").is_file():
        pytest.skip(f"MIMIC-III demo not found at {root}")
    return root


@pytest.fixture
def demo(demo_root):
    return _load(demo_root)


def _rows(path):
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_outcome_tables_are_not_event_tables():
    assert not set(mimic3.TABLES) & set(mimic3.OUTCOME_TABLES)
    for table in ("DIAGNOSES_ICD", "PROCEDURES_ICD", "DRGCODES", "CPTEVENTS"):
        assert table in mimic3.OUTCOME_TABLES
    prefixes = {p.rstrip(":") for p in mimic3.CODE_PREFIXES}
    assert not {"icd", "dx", "diagnosis", "drg", "cpt"} & prefixes


def test_demo_reads_no_outcome_table(demo_root, monkeypatch):
    opened = []

    def recording(open_function):
        def open_and_record(path, *args, **kwargs):
            opened.append(os.path.basename(os.fspath(path)))
            return open_function(path, *args, **kwargs)

        return open_and_record

    monkeypatch.setattr(gzip, "open", recording(gzip.open))
    monkeypatch.setattr(builtins, "open", recording(builtins.open))
    records = mimic3.load_mimic_iii(demo_root)
    tables = {name.split(".")[0] for name in opened}
    assert len(records) == 118
    for table in (*mimic3.OUTCOME_TABLES, "PATIENTS", "ICUSTAYS", "CALLOUT"):
        assert table not in tables
    # The demo lacks CHARTEVENTS, LABEVENTS and INPUTEVENTS_CV (and so
    # D_LABITEMS is not needed).
    assert tables == set(mimic3.TABLES) - {
        "CHARTEVENTS",
        "LABEVENTS",
        "INPUTEVENTS_CV",
        "D_LABITEMS",
    }


def test_demo_counts_match_an_independent_count(demo_root, demo):
    admissions = _rows(demo_root / "ADMISSIONS.csv.gz")
    patients = {
        p["subject_id"]: p for p in _rows(demo_root / "PATIENTS.csv.gz")
    }
    deaths = [a for a in admissions if a["hospital_expire_flag"] == "1"]
    assert (len(admissions), len(deaths)) == (129, 40)
    for death in deaths:  # PATIENTS agrees: died in hospital that day
        day = patients[death["subject_id"]]["dod_hosp"][:10]
        assert death["deathtime"][:10] == day

    def ends_within_a_day(row):
        moment = datetime.datetime.fromisoformat
        ends = [moment(row[k]) for k in ("dischtime", "deathtime") if row[k]]
        return min(ends) <= moment(row["admittime"]) + datetime.timedelta(1)

    kept = [a for a in admissions if not ends_within_a_day(a)]
    counts = demo.counts
    assert counts["admissions"] == 129 and counts["deaths"] == 40
    assert counts["admissions_excluded"] == len(admissions) - len(kept) == 11
    assert counts["deaths_excluded"] == 9
    assert demo.patient_ids == [a["hadm_id"] for a in kept]
    assert demo.groups == [a["subject_id"] for a in kept]
    assert demo.labels.tolist() == [
        int(a["hospital_expire_flag"]) for a in kept
    ]
    assert counts["admissions_kept"] == len(demo) == 118
    assert counts["deaths_kept"] == demo.num_positives == 31
    assert len(set(demo.groups)) == len({a["subject_id"] for a in kept})


def test_demo_events_are_before_the_cutoff(demo):
    codes = {code for record in demo.codes for code in record}
    assert all(code.startswith(mimic3.CODE_PREFIXES) for code in codes)
    times = np.concatenate(demo.times)
    assert np.all(np.isfinite(times)) and times.max() <= 24.0
    assert demo.counts["events_after_cutoff"] > 0
    assert demo.counts["events_before_admission"] == np.sum(times < 0) > 0
    absent = ("chart", "labs", "inputs_cv")
    for source in mimic3.EVENT_TABLES:
        if source in absent:
            assert demo.counts[f"{source}_table_absent"] == 1
        else:
            assert demo.counts[f"events_{source}"] > 0, source
    assert len(times) == sum(
        demo.counts.get(f"events_{s}", 0) for s in mimic3.EVENT_TABLES
    )
    # Amounts of inputs still running at the cutoff are hidden.
    assert demo.counts["values_hidden_until_end"] > 0
    assert all(note == "" for note in demo.notes)  # NOTEEVENTS is empty
    assert demo.counts["patients_without_notes"] == len(demo)


def test_a_shorter_prediction_time_keeps_a_prefix(demo_root, demo):
    short = mimic3.load_mimic_iii(demo_root, 12)
    assert len(short) >= len(demo)  # fewer stays end within 12 h
    index = {patient: i for i, patient in enumerate(short.patient_ids)}
    for j, patient in enumerate(demo.patient_ids):
        i = index[patient]
        # Values of inputs running at 12 h are hidden at 12 h: compare
        # codes and times only.
        early = demo.times[j] <= 12.0
        np.testing.assert_array_equal(short.times[i], demo.times[j][early])
        assert short.codes[i] == [
            c for c, keep in zip(demo.codes[j], early) if keep
        ]


def test_demo_codes_are_labels_from_d_items(demo_root, demo):
    labels = {r["label"] for r in _rows(demo_root / "D_ITEMS.csv.gz")}
    itemized = ("input:", "output:", "icuproc:", "datetime:")
    codes = {c for record in demo.codes for c in record}
    named = [c for c in codes if c.startswith(itemized)]
    assert len(named) > 50
    assert all(c.split(":", 1)[1] in labels for c in named)
    assert "output:Foley" in codes
    assert not any(c.split(":", 1)[1].isdigit() for c in codes)


def test_the_demo_folder_is_detected_and_loaded(demo_root, demo):
    assert data.detect_format(demo_root) == "mimic3"
    records = data.load_records(demo_root, "mimic3")
    assert records.patient_ids == demo.patient_ids


# -- a hand-written MIMIC-III folder ------------------------------------------

ADMIT = datetime.datetime(2150, 3, 1, 10, 0)


def _at(hours):
    """The timestamp `hours` after `ADMIT`."""
    moment = ADMIT + datetime.timedelta(hours=hours)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _day(hours):
    return _at(hours)[:10] + " 00:00:00"


def _write(folder, table, header, rows, gz=False):
    text = "\n".join(",".join(map(str, r)) for r in [header, *rows]) + "\n"
    if gz:
        with gzip.open(folder / f"{table}.csv.gz", "wt") as f:
            f.write(text)
    else:
        (folder / f"{table}.csv").write_text(text, encoding="utf-8")


def _tiny_folder(folder):
    """Admission 1 (subject 10, dies at 50 h), 2 (subject 10, discharged at
    10 h: excluded), 3 (subject 11, no events); upper-case headers as in
    the full database."""
    folder.mkdir()
    _write(
        folder,
        "ADMISSIONS",
        "ROW_ID SUBJECT_ID HADM_ID ADMITTIME DISCHTIME DEATHTIME "
        "HOSPITAL_EXPIRE_FLAG".split(),
        [
            (1, 10, 1, _at(0), _at(50), _at(50), 1),
            (2, 10, 2, _at(100), _at(110), "", 0),
            (3, 11, 3, _at(0), _at(30), "", 0),
        ],
        gz=True,
    )
    _write(
        folder,
        "D_ITEMS",
        ["ROW_ID", "ITEMID", "LABEL"],
        [(1, 211, "Heart Rate"), (2, 225158, "NaCl 0.9%")],
    )
    _write(
        folder,
        "D_LABITEMS",
        ["ROW_ID", "ITEMID", "LABEL", "FLUID"],
        [(1, 50813, "Lactate", "Blood")],
    )
    _write(
        folder,
        "CHARTEVENTS",
        "ROW_ID SUBJECT_ID HADM_ID ITEMID CHARTTIME STORETIME VALUE "
        "VALUENUM ERROR".split(),
        [
            (1, 10, 1, 211, _at(2), _at(2.5), 80, 80, 0),
            (2, 10, 1, 211, _at(23.5), _at(24.5), 90, 90, 0),  # stored late
            (3, 10, 1, 211, _at(3), _at(3), 999, 999, 1),  # an error
            (4, 10, "", 211, _at(3), _at(3), 70, 70, ""),  # no admission
            (5, 10, 2, 211, _at(101), _at(101), 70, 70, ""),  # excluded
        ],
    )
    _write(
        folder,
        "LABEVENTS",
        "ROW_ID SUBJECT_ID HADM_ID ITEMID CHARTTIME VALUE VALUENUM".split(),
        [
            (1, 10, 1, 50813, _at(-1), 2.5, 2.5),  # in the ED
            (2, 10, "", 50813, _at(5), 1.0, 1.0),  # outpatient
            (3, 10, 1, 99999, _at(6), "pos", ""),  # not in D_LABITEMS
        ],
    )
    _write(
        folder,
        "PRESCRIPTIONS",
        "ROW_ID SUBJECT_ID HADM_ID STARTDATE DRUG DOSE_VAL_RX".split(),
        [
            (1, 10, 1, _day(0), "Heparin", 5000),  # at midnight: 14 h
            (2, 10, 1, _day(20), "Aspirin", 81),  # end of day 2: 38 h
            (3, 10, 1, _day(0), "Insulin", "1-10"),  # not a number
        ],
    )
    _write(
        folder,
        "INPUTEVENTS_MV",
        "ROW_ID SUBJECT_ID HADM_ID STARTTIME ENDTIME ITEMID AMOUNT".split(),
        [
            (1, 10, 1, _at(4), _at(5), 225158, 100),
            (2, 10, 1, _at(20), _at(30), 225158, 500),  # ends after 24 h
        ],
    )
    _write(
        folder,
        "NOTEEVENTS",
        "ROW_ID SUBJECT_ID HADM_ID CHARTDATE CHARTTIME STORETIME "
        "ISERROR TEXT".split(),
        [
            (1, 10, 1, _day(0), _at(1), _at(3), "", '"stored, 3 h"'),
            (2, 10, 1, _day(0), "", "", "", '"dated\nday 1"'),  # 14 h
            (3, 10, 1, _day(20), "", "", "", "discharge"),  # 38 h
            (4, 10, 1, _day(0), _at(1), _at(1), 1, "an error"),
            (5, 10, 1, _day(0), _at(1), _at(1), "", '"  "'),  # empty
            (6, 10, "", _day(0), _at(1), _at(1), "", "outpatient"),
        ],
    )
    # Outcome tables that would not parse: reading one would fail.
    for table in mimic3.OUTCOME_TABLES:
        (folder / f"{table}.csv").write_text("broken\n1,2\n")
    return folder


def test_a_tiny_folder_gives_known_records(tmp_path):
    folder = _tiny_folder(tmp_path / "mimic3")
    records = data.load_records(folder)  # detected: ADMISSIONS.csv.gz
    counts = records.counts
    assert records.patient_ids == ["1", "3"]
    assert records.groups == ["10", "11"]
    assert records.labels.tolist() == [1, 0]
    assert counts["admissions_excluded"] == 1
    assert records.codes[0] == [
        "lab:Lactate (blood)",  # from the emergency department
        "chart:Heart Rate",  # at storetime
        "input:NaCl 0.9%",
        "lab:99999",  # an item without a label keeps its id
        "rx:Heparin",  # at the end of its start date
        "rx:Insulin",
        "input:NaCl 0.9%",
    ]
    np.testing.assert_allclose(records.times[0], [-1, 2.5, 4, 6, 14, 14, 20])
    np.testing.assert_array_equal(
        records.values[0], [2.5, 80, 100, math.nan, 5000, math.nan, math.nan]
    )
    assert counts["values_hidden_until_end"] == 1  # the 500 running at 24 h
    assert counts["non_numeric_values"] == 1  # "1-10"
    assert counts["chart_after_cutoff"] == 1  # stored after 24 h
    assert counts["prescriptions_after_cutoff"] == 1
    assert counts["chart_errors"] == 1
    assert counts["chart_without_admission"] == 2  # none, excluded
    assert counts["labs_without_admission"] == 1
    assert counts["inputs_cv_table_absent"] == 1
    assert records.codes[1] == [] and counts["patients_without_events"] == 1
    # Notes: in the order known, up to the prediction time.
    assert records.notes == ["stored, 3 h\ndated\nday 1", ""]
    assert counts["notes"] == 2 and counts["notes_after_cutoff"] == 1
    assert counts["notes_errors"] == counts["empty_notes"] == 1
    assert counts["notes_without_admission"] == 1


def test_a_malformed_row_names_its_file_and_line(tmp_path):
    folder = _tiny_folder(tmp_path / "mimic3")
    with open(folder / "CHARTEVENTS.csv", "a", encoding="utf-8") as f:
        f.write("6,10,1,211\n")  # line 7: 4 fields of 9
    path = re.escape(os.path.join(folder, "CHARTEVENTS.csv"))
    with pytest.raises(ValueError, match=f"^{path}:7: expected 9 fields"):
        mimic3.load_mimic_iii(folder)


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    folder = _tiny_folder(tmp_path / "mimic3")
    with open(folder / "CHARTEVENTS.csv", "ab") as f:
        f.write(b"6,10,1,211,,,caf\xe9,,0\n")  # Latin-1, line 7
    with pytest.raises(ValueError, match=r"CHARTEVENTS.csv:7: unreadable"):
        mimic3.load_mimic_iii(folder)


def test_a_missing_header_column_is_named(tmp_path):
    folder = _tiny_folder(tmp_path / "mimic3")
    _write(folder, "TRANSFERS", ["ROW_ID", "HADM_ID"], [(1, 1)])
    with pytest.raises(ValueError, match=r"TRANSFERS.csv:1: .*eventtype"):
        mimic3.load_mimic_iii(folder)


def test_format_mimic3_without_admissions_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="ADMISSIONS.csv"):
        data.load_records(tmp_path, format="mimic3")
    assert data.detect_format(tmp_path) == "long"
