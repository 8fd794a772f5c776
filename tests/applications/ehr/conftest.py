"""Fixtures shared by the EHR tests."""

import numpy as np
import pytest

from attention_zoo_apps.ehr.records import PatientRecords


def _records(count=40):
    """`count` patients, a quarter positive, 3 stays a person; codes `a`,
    `b` (odd patients) or `a`, `c`, `zz` (even), `a` valued 1 or 3."""
    labels = np.arange(count) % 4 == 0  # a quarter positive
    return PatientRecords(
        patient_ids=[f"p{i}" for i in range(count)],
        codes=[["a", "b"] if i % 2 else ["a", "c", "zz"] for i in range(count)],
        values=[
            [1.0, np.nan] if i % 2 else [3.0, 2.0, 7] for i in range(count)
        ],
        times=[[0, 1] if i % 2 else [0, 1, 2] for i in range(count)],
        notes=[""] * count,
        labels=labels.astype(int),
        prediction_times=np.full(count, 24.0),
        groups=[f"s{i // 3}" for i in range(count)],  # 3 stays a person
    )


@pytest.fixture
def make_records():
    """`make_records(count=40)`: small `PatientRecords` (see `_records`)."""
    return _records
