"""The EHR export: served without Keras or the project, it gives what
`RiskModel.predict` gives; padding, late events, unknown codes, empty
notes; only TensorFlow and TF Text ops."""

import json
import math

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import registry
from attention_zoo_apps.ehr.risk_model import RiskModel
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from tests.support import fresh_process
from tests.support import shared_bundles
from tests.support.ehr_inputs import serving_inputs

TINY = (
    registry.get("ehr").tiny_config().replace(max_events=12, max_note_tokens=10)
)


@pytest.fixture(scope="module")
def patients():
    return make_synthetic_patients(40, seed=5)


@pytest.fixture(scope="module")
def models(patients, shared):
    """The two models the tests export: variant -> model (read only)."""
    model = RiskModel(TINY)
    model.fit(patients.records, epochs=1, verbose=0)
    # TINY with encoder="gru", use_notes=False on `patients`, shared with
    # the risk-model tests.
    events_only = shared_bundles.ehr_events_only(shared)
    assert events_only.config == TINY.replace(encoder="gru", use_notes=False)
    return {"multihead": model, "gru-no-notes": events_only}


@pytest.fixture(params=["multihead", "gru-no-notes"])
def variant(request):
    return request.param


@pytest.fixture
def trained(models, variant):
    return models[variant]


def _test_records(patients):
    records = patients.records.select(range(5))
    # Patient 0: an unknown code and a NaN value; patient 1: no events and
    # no note; float32 times, as served.
    records.codes[0] = records.codes[0] + ["never:seen"]
    records.values[0] = np.r_[records.values[0], math.nan]
    records.times[0] = np.r_[records.times[0], records.prediction_times[0]]
    records.codes[1] = []
    records.values[1] = np.zeros(0)
    records.times[1] = np.zeros(0)
    records.notes[1] = ""
    records.times = [
        t.astype("float32").astype("float64") for t in records.times
    ]
    records.prediction_times = records.prediction_times.astype(
        "float32"
    ).astype("float64")
    return records


def _late_events(records):
    """Events after the prediction time, which the export ignores
    (patient 2 gets one), as the loaders drop them."""
    return [(), (), [("lab:late", 1.0, records.prediction_times[2] + 5.0)]]


@pytest.fixture(scope="module")
def export_paths(models, tmp_path_factory):
    """Each model exported once (read-only): variant -> path."""
    paths = {}
    for name, model in models.items():
        paths[name] = str(tmp_path_factory.mktemp("export") / "ehr" / "1")
        model.export(paths[name])
    return paths


@pytest.fixture
def export_path(export_paths, variant):
    return export_paths[variant]


@pytest.fixture(scope="module")
def served_all(export_paths, patients):
    """What one fresh process without Keras or the project answers from
    each export for `_test_records`, and which of its ops neither
    TensorFlow nor tensorflow-text registers: variant -> answer."""
    records = _test_records(patients)
    inputs = serving_inputs(records, _late_events(records))
    jobs = [
        (name, path, sorted(fresh_process.saved_model_ops(path)))
        for name, path in export_paths.items()
    ]
    return fresh_process.run_without_project(
        f"""
inputs = json.loads({json.dumps(inputs)!r})
results = {{}}
for name, path, ops in {jobs!r}:
    model = tf.saved_model.load(path)
    serve = model.signatures["serving_default"]
    out = serve(codes=tf.constant(inputs["codes"]),
                values=tf.constant(inputs["values"], tf.float32),
                times=tf.constant(inputs["times"], tf.float32),
                prediction_time=tf.constant(inputs["prediction_time"],
                                            tf.float32),
                note=tf.constant(inputs["note"]))
    results[name] = {{
        "risk": out["risk"].numpy().tolist(),
        "event_attention": out["event_attention"].numpy().tolist(),
        "note_attention": out["note_attention"].numpy().tolist(),
        "note_tokens": [[t.decode() for t in row]
                        for row in out["note_tokens"].numpy()],
        "dtypes": {{k: v.dtype.name for k, v in out.items()}},
        "inputs": sorted(serve.structured_input_signature[1]),
        "unknown_ops": unregistered_ops(ops),
    }}
emit(results)
"""
    )


@pytest.fixture
def served(served_all, variant):
    return served_all[variant]


def test_export_serves_what_predict_gives_without_the_project(
    trained, patients, served
):
    records = _test_records(patients)
    expected = trained.predict(records)
    inputs = serving_inputs(records, _late_events(records))
    assert served["inputs"] == [
        "codes",
        "note",
        "prediction_time",
        "times",
        "values",
    ]
    assert served["dtypes"] == {
        "risk": "float32",
        "event_attention": "float32",
        "note_attention": "float32",
        "note_tokens": "string",
        "truncated": "bool",
    }
    np.testing.assert_allclose(served["risk"], expected["risk"], atol=1e-5)
    event_attention = np.array(served["event_attention"])
    assert event_attention.shape == np.shape(inputs["codes"])
    for i, weights in enumerate(expected["event_attention"]):
        count = len(records.codes[i])
        start = max(count - TINY.max_events, 0)
        row = event_attention[i]
        np.testing.assert_allclose(row[start:count], weights, atol=1e-5)
        assert np.all(row[:start] == 0) and np.all(row[count:] == 0)
    assert np.all(event_attention[1] == 0)  # no events
    note_attention = np.array(served["note_attention"])
    if not trained.config.use_notes:
        assert note_attention.shape == (5, 0)
        return
    vocabulary = trained.note_tokenizer.vocabulary
    ids = trained.encode(records)["note"]
    for i, weights in enumerate(expected["note_attention"]):
        n = len(weights)
        np.testing.assert_allclose(note_attention[i, :n], weights, atol=1e-5)
        assert np.all(note_attention[i, n:] == 0)
        tokens = served["note_tokens"][i]
        assert tokens[:n] == [vocabulary[t] for t in ids[i][:n]]
        assert all(t == "" for t in tokens[n:])
    assert served["note_tokens"][1] == [""] * len(served["note_tokens"][1])


def test_export_handles_padding_only_unknown_codes_and_empty_batches(
    export_path,
):
    serve = tf.saved_model.load(export_path).signatures["serving_default"]

    def call(codes, values, times, prediction_time, note):
        return serve(
            codes=tf.constant(np.array(codes, object), tf.string),
            values=tf.constant(values, tf.float32),
            times=tf.constant(times, tf.float32),
            prediction_time=tf.constant(prediction_time, tf.float32),
            note=tf.constant(note, tf.string),
        )

    # Unknown codes only, padding only, and no event slots at all.
    out = call(
        [["x:unknown", "", "y:unknown"], ["", "", ""]],
        [[1.0, 2.0, math.nan], [0.0] * 3],
        [[1.0, 2.0, 3.0], [0.0] * 3],
        [4.0, 4.0],
        ["", ""],
    )
    assert out["risk"].shape == (2,)
    assert np.all(np.isfinite(out["risk"].numpy()))
    weights = out["event_attention"].numpy()
    assert weights[0, 1] == 0 and np.all(weights[1] == 0)
    np.testing.assert_allclose(weights[0].sum(), 1.0, atol=1e-5)
    out = call(
        np.zeros((2, 0)),
        np.zeros((2, 0)),
        np.zeros((2, 0)),
        [1.0, 2.0],
        ["a note", ""],
    )
    assert out["event_attention"].shape == (2, 0)
    empty = call(
        np.zeros((0, 3), object), np.zeros((0, 3)), np.zeros((0, 3)), [], []
    )
    assert empty["risk"].shape == (0,)
    with pytest.raises(tf.errors.InvalidArgumentError, match="one shape"):
        call([["a", "b"]], [[1.0]], [[1.0]], [1.0], [""])


def test_exported_graph_uses_only_tensorflow_and_text_ops(export_path, served):
    assert "LookupTableFindV2" in fresh_process.saved_model_ops(export_path)
    unknown = served["unknown_ops"]
    assert not unknown, f"ops outside TensorFlow and TF Text: {unknown}"
