import numpy as np
import pytest

from attention_zoo_apps.ehr import data
from attention_zoo_apps.ehr import synthetic


@pytest.fixture(scope="module")
def patients():
    return synthetic.make_synthetic_patients(600, seed=0)


def test_deterministic_per_seed(patients):
    again = synthetic.make_synthetic_patients(600, seed=0)
    other = synthetic.make_synthetic_patients(600, seed=1)
    assert again.records.codes == patients.records.codes
    assert again.records.notes == patients.records.notes
    assert again.planted_events == patients.planted_events
    np.testing.assert_array_equal(again.records.labels, patients.records.labels)
    for a, b in zip(again.records.values, patients.records.values):
        np.testing.assert_array_equal(a, b)
    assert other.records.codes != patients.records.codes


def test_shapes_and_positive_rate(patients):
    records = patients.records
    assert len(records) == 600
    assert 0.15 <= records.labels.mean() <= 0.35
    counts = records.num_events()
    assert counts.min() >= 10 and counts.max() <= 60 + 8
    for times in records.times:
        assert np.all(np.diff(times) >= 0)
        assert times.min() >= 0 and times.max() <= 24.0
    assert len(set(records.patient_ids)) == 600
    assert 0 < sum(note == "" for note in records.notes) < 60


def test_planted_indices_point_at_planted_items(patients):
    records = patients.records
    for i in range(len(records)):
        codes = records.codes[i]
        risky = [j for j, c in enumerate(codes) if c in synthetic.RISK_CODES]
        assert patients.planted_events[i] == risky
        words = records.notes[i].split()
        assert all(
            words[k] in synthetic.RISK_PHRASES
            for k in patients.planted_note_words[i]
        )
        assert sum(w in synthetic.RISK_PHRASES for w in words) == len(
            patients.planted_note_words[i]
        )


def test_planted_codes_are_predictive(patients):
    labels = patients.records.labels
    has_code = np.array([len(p) > 0 for p in patients.planted_events])
    # Most positives hold a planted code, few negatives do.
    assert has_code[labels == 1].mean() > 0.8
    assert has_code[labels == 0].mean() < 0.15
    decoy = np.array(
        [
            any(c in synthetic.DECOY_CODES for c in codes)
            for codes in patients.records.codes
        ]
    )
    assert decoy[labels == 0].mean() > 0.2  # decoys in negatives too
    # The true risk ranks patients well: the target AUROC is reachable.
    positive = patients.probabilities[labels == 1]
    negative = patients.probabilities[labels == 0]
    auroc = np.mean(positive[:, None] > negative[None]) + 0.5 * np.mean(
        positive[:, None] == negative[None]
    )
    assert auroc > 0.9


def test_late_events_are_written_and_dropped_on_load(tmp_path):
    patients = synthetic.make_synthetic_patients(30, seed=2)
    records = patients.records
    for late, cutoff in zip(patients.late_events, records.prediction_times):
        assert late and all(time > cutoff for time, _, _ in late)
    labels = records.labels
    revealing = [{code for _, code, _ in late} for late in patients.late_events]
    assert all(
        ("outcome:death_note" in codes) == bool(label)
        for codes, label in zip(revealing, labels)
    )
    synthetic.save_synthetic_long_format(patients, tmp_path)
    text = (tmp_path / "events.csv").read_text()
    assert "outcome:death_note" in text or not labels.any()
    assert "outcome:discharge_home" in text
    loaded = data.load_long_format(tmp_path)
    assert loaded.counts["events_after_cutoff"] == sum(
        len(late) for late in patients.late_events
    )
    assert loaded.counts["notes_after_cutoff"] == 30
    assert loaded.codes == records.codes
    assert loaded.notes == records.notes
    np.testing.assert_array_equal(loaded.labels, labels)
    for a, b in zip(loaded.values, records.values):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(loaded.times, records.times):
        np.testing.assert_array_equal(a, b)


def test_rejects_a_bad_count():
    with pytest.raises(ValueError, match="count"):
        synthetic.make_synthetic_patients(-1)


def test_fit_arguments_are_the_records():
    (records,) = synthetic.fit_arguments(3, seed=1)
    assert isinstance(records, data.PatientRecords) and len(records) == 3
    expected = synthetic.make_synthetic_patients(3, seed=1).records
    assert records.patient_ids == expected.patient_ids
    assert records.codes == expected.codes
