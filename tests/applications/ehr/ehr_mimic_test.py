import functools

import numpy as np
import pytest

from attention_zoo_apps.ehr import data
from attention_zoo_apps.ehr import mimic


@functools.lru_cache(maxsize=1)
def _load(root):
    return mimic.load_mimic_iv(root)  # once for the module (under a second)


@pytest.fixture
def demo_root(shared_data):
    root = shared_data / "mimic-iv-demo"
    if not (root / "hosp" / "admissions.csv.gz").is_file():
        pytest.skip(f"MIMIC-IV demo not found at {root}")
    return root


@pytest.fixture
def demo(demo_root):
    return _load(demo_root)


def test_outcome_tables_are_never_read():
    read = set(mimic.TABLES)
    assert not read & set(mimic.OUTCOME_TABLES)
    for table in ("diagnoses_icd", "procedures_icd", "drgcodes"):
        assert f"hosp/{table}" in mimic.OUTCOME_TABLES
        assert not any(table in name for name in read)
    prefixes = [p.rstrip(":") for p in mimic.CODE_PREFIXES]
    assert not {"icd", "dx", "diagnosis", "drg", "hcpcs"} & set(prefixes)


def test_demo_admission_counts(demo):
    counts = demo.counts
    assert counts["admissions"] == 275
    assert counts["deaths"] == 15
    assert counts["admissions_excluded"] == 30  # ended within 24 h
    assert counts["deaths_excluded"] == 1
    assert counts["admissions_kept"] == len(demo) == 245
    assert counts["deaths_kept"] == demo.num_positives == 14
    assert len(set(demo.groups)) == 100  # subjects
    assert len(set(demo.patient_ids)) == 245


def test_demo_events_are_before_the_cutoff_and_never_outcomes(demo):
    codes = {code for record in demo.codes for code in record}
    assert all(code.startswith(mimic.CODE_PREFIXES) for code in codes)
    assert not any(code.startswith("outcome") for code in codes)
    times = np.concatenate(demo.times)
    assert np.all(np.isfinite(times))
    assert times.max() <= 24.0
    # Emergency department events of the admission come before it.
    assert demo.counts["events_before_admission"] == np.sum(times < 0) > 0
    for source in mimic.EVENT_TABLES:
        assert demo.counts[f"events_{source}"] > 0, source
    assert sum(len(c) for c in demo.codes) == sum(
        demo.counts[f"events_{s}"] for s in mimic.EVENT_TABLES
    )
    assert demo.counts["events_after_cutoff"] > 0
    assert all(note == "" for note in demo.notes)


def test_a_shorter_prediction_time_keeps_a_prefix(demo_root):
    sources = ["transfers", "outputs"]
    short = mimic.load_mimic_iv(demo_root, 12, sources=sources)
    full = mimic.load_mimic_iv(demo_root, 24, sources=sources)
    assert short.counts.get("events_labs", 0) == 0
    assert len(short) >= len(full) == 245  # fewer stays end within 12 h
    index = {patient: i for i, patient in enumerate(short.patient_ids)}
    for j, patient in enumerate(full.patient_ids):
        i = index[patient]
        early = full.times[j] <= 12.0
        np.testing.assert_array_equal(short.times[i], full.times[j][early])
        assert short.codes[i] == [
            c for c, keep in zip(full.codes[j], early) if keep
        ]


def test_long_format_round_trip(demo, tmp_path):
    records = demo.select(range(0, len(demo), 25))  # ten admissions
    data.save_long_format(records, tmp_path)
    loaded = data.load_long_format(tmp_path)
    assert loaded.patient_ids == records.patient_ids
    assert loaded.groups == records.groups
    assert loaded.codes == records.codes
    for a, b in zip(loaded.values, records.values):
        np.testing.assert_array_equal(a, b)


def test_split_groups_admissions_by_subject(demo):
    splits = data.split_patients(demo, 0.2, 0.2, seed=0)
    subjects = [set(s.groups) for s in splits]
    assert not (subjects[0] & subjects[1] or subjects[0] & subjects[2])
    assert not subjects[1] & subjects[2]
    assert sum(len(s) for s in splits) == len(demo)
    assert all(s.num_positives > 0 for s in splits)
