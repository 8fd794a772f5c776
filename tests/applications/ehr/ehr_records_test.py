"""`split_patients`: groups stay together, stratified,
deterministic for a seed; bad fractions are rejected."""

import pytest

from attention_zoo_apps.ehr.records import split_patients


@pytest.mark.parametrize("by", ["group", "patient"])
def test_split_keeps_groups_together_and_is_deterministic(by, make_records):
    records = make_records()
    splits = split_patients(records, 0.2, 0.2, seed=3, by=by)
    again = split_patients(records, 0.2, 0.2, seed=3, by=by)
    assert [s.patient_ids for s in splits] == [s.patient_ids for s in again]
    ids = [p for s in splits for p in s.patient_ids]
    assert sorted(ids) == sorted(records.patient_ids)
    keys = [set(s.groups if by == "group" else s.patient_ids) for s in splits]
    assert not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])
    assert all(s.num_positives > 0 for s in splits)  # stratified
    assert all(len(s) > 0 for s in splits)


def test_split_rejects_bad_fractions(make_records):
    with pytest.raises(ValueError, match="validation_fraction"):
        split_patients(make_records(), 1.0, 0.0)
    with pytest.raises(ValueError, match="below 1"):
        split_patients(make_records(), 0.5, 0.5)
