"""RiskModel: config, encoding, class weights, OOV codes, the
prediction-time cutoff, save / load, and (slow) learning the planted codes
of the synthetic patients."""

import numpy as np
import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.ehr.config import EHRConfig
from attention_zoo_apps.ehr.data import OOV_ID
from attention_zoo_apps.ehr.data import PatientRecords
from attention_zoo_apps.ehr.data import load_long_format
from attention_zoo_apps.ehr.risk_model import RiskModel
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from attention_zoo_apps.ehr.synthetic import save_synthetic_long_format
from tests.support import shared_bundles

TINY = registry.get("ehr").tiny_config()


@pytest.fixture(scope="module")
def patients():
    return make_synthetic_patients(48, seed=3)


@pytest.fixture(scope="module")
def trained(shared):
    """The tiny config trained on `patients` (2 epochs; shared with the
    explain tests, read only)."""
    return shared_bundles.ehr_run(shared)[0]


# -- config -----------------------------------------------------------------


def test_config_round_trip():
    config = EHRConfig(encoder="multihead", max_events=32, use_notes=False)
    assert EHRConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"encoder": "rnn"}, "encoder"),
        ({"max_events": 0}, "max_events"),
        ({"dropout": 1.5}, "dropout"),
        ({"learning_rate": 0.0}, "learning_rate"),
    ],
)
def test_config_errors(changes, message):
    with pytest.raises(ValueError, match=message):
        EHRConfig(**changes)


# -- encoding -----------------------------------------------------------------


def _record(codes, times, note="patient resting", label=0, cutoff=24.0):
    return PatientRecords(
        patient_ids=["x"],
        codes=[codes],
        values=[[1.0] * len(codes)],
        times=[times],
        notes=[note],
        labels=[label],
        prediction_times=[cutoff],
    )


def test_class_weights_are_balanced():
    labels = np.array([1] + [0] * 9)
    weights = RiskModel(TINY).class_weights(labels)
    assert weights == {0: pytest.approx(10 / 18), 1: pytest.approx(5.0)}
    plain = RiskModel(TINY.replace(class_weighting=False))
    assert plain.class_weights(labels) == {0: 1.0, 1: 1.0}


def test_encode_keeps_the_last_events(trained):
    model = RiskModel(
        TINY.replace(max_events=3),
        note_tokenizer=trained.note_tokenizer,
        code_vocabulary=trained.code_vocabulary,
        scaler=trained.scaler,
    )
    codes = ["lab:sodium", "rx:heparin", "lab:sodium", "never:seen"]
    arrays = model.encode(_record(codes, [1.0, 2.0, 3.0, 20.0]))
    assert arrays["codes"].shape == (1, 16)  # padded to a multiple of 16
    np.testing.assert_array_equal(arrays["event_index"][0, :4], [1, 2, 3, -1])
    expected = trained.code_vocabulary.encode(codes[1:]).tolist()
    assert arrays["codes"][0, :4].tolist() == expected + [0]
    assert expected[-1] == OOV_ID
    np.testing.assert_allclose(arrays["times"][0, :3], [22.0, 21.0, 4.0])
    assert arrays["note"].shape[1] % 16 == 0


# -- a (barely) trained model -------------------------------------------------


def test_predict_outputs(trained, patients):
    records = patients.records.select(range(5))
    output = trained.predict(records, top_k=3)
    assert output["risk"].shape == (5,)
    assert np.all((output["risk"] > 0) & (output["risk"] < 1))
    for i in range(5):
        events = output["top_events"][i]
        assert len(events) == 3
        weights = [w for _, _, w in events]
        assert weights == sorted(weights, reverse=True)
        for code, time, _ in events:
            j = records.codes[i].index(code)
            assert time in records.times[i].tolist() and j >= 0
        attention = output["event_attention"][i]
        assert attention.shape == (len(records.codes[i]),)
        assert attention.sum() == pytest.approx(1.0, abs=1e-5)
        words = [w for w, _ in output["note_words"][i]]
        assert all(word in records.notes[i] for word in words)
    report = trained.evaluate(patients.records)
    assert 0.0 <= report["auroc"] <= 1.0 and 0.0 <= report["brier"] <= 1.0
    assert sum(row["count"] for row in report["calibration"]) == 48


def test_oov_code_still_predicts(trained, patients):
    record = patients.records.select([0])
    unseen = _record(
        list(record.codes[0]) + ["never:seen"],
        list(record.times[0]) + [23.5],
        note=record.notes[0],
    )
    assert "never:seen" not in trained.code_vocabulary
    assert trained.encode(unseen)["codes"][0, len(record.codes[0])] == OOV_ID
    output = trained.predict(unseen, top_k=100)
    assert np.isfinite(output["risk"][0])
    assert "never:seen" in [code for code, _, _ in output["top_events"][0]]


def test_events_after_the_cutoff_change_nothing(trained, patients, tmp_path):
    save_synthetic_long_format(patients, tmp_path)  # with late events
    loaded = load_long_format(tmp_path)
    assert loaded.counts["events_after_cutoff"] == 2 * len(loaded)
    assert loaded.codes == patients.records.codes
    expected = trained.predict(patients.records)
    actual = trained.predict(loaded)
    np.testing.assert_array_equal(actual["risk"], expected["risk"])
    assert actual["top_events"] == expected["top_events"]


def test_save_load_gives_identical_predictions(trained, patients, tmp_path):
    trained.save(tmp_path)
    loaded = RiskModel.load(tmp_path)
    assert loaded.config == trained.config
    assert loaded.code_vocabulary.codes == trained.code_vocabulary.codes
    assert loaded.scaler.stats == trained.scaler.stats
    records = patients.records.select(range(10))
    expected, actual = trained.predict(records), loaded.predict(records)
    np.testing.assert_array_equal(actual["risk"], expected["risk"])
    assert actual["top_events"] == expected["top_events"]
    assert actual["note_words"] == expected["note_words"]


def test_events_only_model_saves_without_a_tokenizer(
    shared, patients, tmp_path
):
    model = shared_bundles.ehr_events_only(shared)  # read only
    assert not model.config.use_notes
    model.save(tmp_path)
    loaded = RiskModel.load(tmp_path)
    assert loaded.note_tokenizer is None
    records = patients.records.select(range(4))
    output = loaded.predict(records)
    assert "note_words" not in output
    np.testing.assert_array_equal(
        output["risk"], model.predict(records)["risk"]
    )


def test_fit_rejects_other_inputs():
    with pytest.raises(TypeError, match="PatientRecords"):
        RiskModel(TINY).fit([["lab:sodium"]])
