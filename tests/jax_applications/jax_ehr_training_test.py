"""The EHR risk model trained, resumed and exported on the JAX backend
(see jax_translation_training_test.py); the export serves the JAX model's
risks."""

import numpy as np

from tests.support import jax_runs
from tests.support.ehr_inputs import served_risk

pytestmark = jax_runs.ONLY_ON_JAX


def test_ehr_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from attention_zoo_apps.ehr import synthetic

    risk_model, path = jax_runs.train_on_jax(monkeypatch, tmp_path, "ehr")
    records = synthetic.make_synthetic_patients(6, seed=7).records
    # float32 times, as served.
    records.times = [
        t.astype("float32").astype("float64") for t in records.times
    ]
    records.prediction_times = records.prediction_times.astype(
        "float32"
    ).astype("float64")
    expected = risk_model.predict(records)["risk"]
    served = served_risk(path, records)
    np.testing.assert_allclose(served["risk"], expected, atol=1e-5)
    assert len(set(np.round(expected, 4))) > 1  # not a constant model
