"""The long format: loading (order, cutoff, counts, gzip, groups), saving,
malformed rows; the folder layouts `load_records` tells apart."""

import gzip
import math
import re

import numpy as np
import pytest

from attention_zoo_apps.ehr import data

EVENTS = """patient_id,time,code,value
a,2.5,lab:lactate,4.1
a,0.5,rx:heparin,
a,1.0,lab:glucose,high
b,3,lab:lactate,1.0
a,30,outcome:death,
ghost,1,lab:lactate,2.0
"""
NOTES = """patient_id,time,text
a,2,"second note"
a,1,"first note,
two lines"
a,40,patient expired
b,1,"   "
"""
LABELS = """patient_id,label,prediction_time
a,1,24
b,0,2
c,0,24
"""


def _write(directory, events=EVENTS, notes=NOTES, labels=LABELS):
    directory.mkdir(exist_ok=True)
    (directory / "events.csv").write_text(events)
    if notes is not None:
        (directory / "notes.csv").write_text(notes)
    (directory / "labels.csv").write_text(labels)
    return directory


def _assert_same(left, right):
    assert left.patient_ids == right.patient_ids
    assert left.codes == right.codes
    assert left.notes == right.notes
    assert left.groups == right.groups
    np.testing.assert_array_equal(left.labels, right.labels)
    np.testing.assert_array_equal(left.prediction_times, right.prediction_times)
    for lv, rv, lt, rt in zip(
        left.values, right.values, left.times, right.times
    ):
        np.testing.assert_array_equal(lv, rv)  # NaN == NaN here
        np.testing.assert_array_equal(lt, rt)


def test_load_sorts_events_and_applies_the_cutoff(tmp_path):
    records = data.load_long_format(_write(tmp_path))
    assert records.patient_ids == ["a", "b", "c"]
    assert records.codes[0] == ["rx:heparin", "lab:glucose", "lab:lactate"]
    np.testing.assert_array_equal(records.times[0], [0.5, 1.0, 2.5])
    assert math.isnan(records.values[0][0])  # empty: no value
    assert math.isnan(records.values[0][1])  # "high": not a number
    assert records.values[0][2] == 4.1
    assert records.notes[0] == "first note,\ntwo lines\nsecond note"
    assert records.codes[1] == []  # its only event is at 3 h > 2 h
    assert records.notes[1] == "" and records.notes[2] == ""
    assert records.label_counts() == {0: 2, 1: 1}
    assert records.num_positives == 1
    assert records.counts == {
        "non_numeric_values": 1,
        "events_after_cutoff": 2,
        "notes_after_cutoff": 1,
        "events_unlabelled": 1,
        "notes_unlabelled": 0,
        "empty_notes": 1,
        "patients_without_events": 2,
        "patients_without_notes": 2,
    }


def test_events_after_the_prediction_time_change_nothing(tmp_path):
    before = data.load_long_format(_write(tmp_path / "before"))
    late = (
        "a,24.0001,outcome:death,1\n"
        "a,100,lab:lactate,99\n"
        "b,2.01,rx:norepinephrine,\n"
    )
    changed = EVENTS.replace("a,30,outcome:death,", "a,31,other,5") + late
    notes = NOTES + "a,25,intubated unresponsive\n"
    after = data.load_long_format(
        _write(tmp_path / "after", events=changed, notes=notes)
    )
    _assert_same(before, after)
    assert after.counts["events_after_cutoff"] == 5


def test_the_boundary_is_inclusive(tmp_path):
    events = "patient_id,time,code,value\na,24,at:cutoff,\na,24.5,after,\n"
    labels = "patient_id,label,prediction_time\na,0,24\n"
    records = data.load_long_format(
        _write(tmp_path, events=events, notes=None, labels=labels)
    )
    assert records.codes == [["at:cutoff"]]


def test_round_trip_through_save(tmp_path):
    records = data.load_long_format(_write(tmp_path / "in"))
    data.save_long_format(records, tmp_path / "out")
    _assert_same(records, data.load_long_format(tmp_path / "out"))


def test_gzipped_files_and_group_column(tmp_path):
    for name, text in (
        ("events", EVENTS),
        (
            "labels",
            LABELS.replace("prediction_time", "prediction_time,group_id")
            .replace("a,1,24", "a,1,24,x")
            .replace("b,0,2", "b,0,2,x")
            .replace("c,0,24", "c,0,24,"),
        ),
    ):
        with gzip.open(tmp_path / f"{name}.csv.gz", "wt") as f:
            f.write(text)
    records = data.load_long_format(tmp_path)
    assert records.groups == ["x", "x", "c"]
    assert records.notes == ["", "", ""]


@pytest.mark.parametrize(
    "file, text, line, message",
    [
        ("events", EVENTS + "a,1,code\n", 8, "expected 4"),
        ("events", EVENTS + "a,soon,code,1\n", 8, "`time` must be a number"),
        ("events", EVENTS + "a,nan,code,1\n", 8, "`time` must be a number"),
        ("events", EVENTS + "a,1,,1\n", 8, "`code` is empty"),
        ("events", "patient_id,time,value\n", 1, "the header lacks the column"),
        ("labels", LABELS + "d,2,24\n", 5, "`label` must be 0 or 1"),
        ("labels", LABELS + "a,0,24\n", 5, "duplicate patient_id"),
        ("labels", LABELS + "d,0,\n", 5, "`prediction_time` must be"),
        ("notes", NOTES + "a,x,text\n", 7, "`time` must be a number"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, file, text, line, message):
    texts = {"events": EVENTS, "notes": NOTES, "labels": LABELS}
    texts[file] = text
    _write(tmp_path, **texts)
    path = tmp_path / f"{file}.csv"
    with pytest.raises(
        ValueError, match=re.escape(f"{path}:{line}: {message}")
    ):
        data.load_long_format(tmp_path)


def test_load_records_detects_the_layout(tmp_path):
    folder = _write(tmp_path / "long")
    assert data.detect_format(folder) == "long"
    assert data.load_records(folder).patient_ids == ["a", "b", "c"]
    (tmp_path / "mimic" / "hosp").mkdir(parents=True)
    (tmp_path / "mimic" / data.MIMIC_MARKER).write_bytes(b"")
    assert data.detect_format(tmp_path / "mimic") == "mimic"
    with pytest.raises(ValueError, match="`format` must be"):
        data.load_records(folder, format="csv")


def test_the_split_parts_are_importable_from_data():
    from attention_zoo_apps.ehr import encoding
    from attention_zoo_apps.ehr import records

    assert data.PatientRecords is records.PatientRecords
    assert data.split_patients is records.split_patients
    assert data.CodeVocabulary is encoding.CodeVocabulary
    assert data.ValueScaler is encoding.ValueScaler
    assert data.PAD_ID == encoding.EVENT_PAD_ID == 0
