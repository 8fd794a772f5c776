"""What the EHR model does not read is said, never cut silently: the
export's `truncated` is true for a patient with more events up to the
prediction time than `max_events` or a note longer than `max_note_tokens`
(whose tokens read are those of the whole note, cut before it is
tokenized), and `attention-zoo explain` warns on stderr of a record the
model read only part of."""

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import cli
from attention_zoo_apps import registry
from attention_zoo_apps.ehr.risk_model import RiskModel
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from attention_zoo_apps.ehr.synthetic import save_synthetic_long_format
from tests.support import tiny_bundles

NOTE = "hypotensive overnight started pressors "


@pytest.fixture(scope="module")
def risk_model():
    model = tiny_bundles.tiny_bundle("ehr")
    assert (model.config.max_events, model.config.max_note_tokens) == (12, 10)
    return model


@pytest.fixture(scope="module")
def serve(risk_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("ehr") / "1"
    risk_model.export(str(path), jit_compile=False)
    return tf.saved_model.load(str(path)).signatures["serving_default"]


def _patients(serve, events, notes, late=0):
    """Outputs for patients with `events[i]` events up to the prediction
    time (24), `late` more after it, and the note `notes[i]`."""
    width = max(events) + late
    codes = np.full((len(events), width), b"", object)
    times = np.zeros((len(events), width), "float32")
    for row, count in enumerate(events):
        codes[row, : count + late] = b"lab:lactate"
        times[row, :count] = np.linspace(1, 23, count)
        times[row, count : count + late] = 30.0
    return serve(
        codes=tf.constant(codes),
        values=tf.ones_like(tf.constant(times)),
        times=tf.constant(times),
        prediction_time=tf.fill([len(events)], 24.0),
        note=tf.constant(notes),
    )


def test_the_export_says_which_records_it_cut(serve, risk_model):
    words = [w for w in risk_model.note_tokenizer.vocabulary if w.isalpha()]
    short = " ".join(words[:10])  # 10 tokens: all read
    outputs = _patients(
        serve,
        events=[12, 13, 12, 3],
        notes=["", "", NOTE * 20, short],
        late=5,  # after the prediction time: ignored, not cut
    )
    assert outputs["truncated"].numpy().tolist() == [False, True, True, False]


def test_a_long_note_reads_the_tokens_of_the_whole_note(serve, risk_model):
    note = NOTE * 20_000  # 780 kB
    outputs = _patients(serve, events=[1], notes=[note])
    whole = risk_model.note_tokenizer.tokenize([note])[0, -10:].numpy()
    vocabulary = np.array(risk_model.note_tokenizer.vocabulary, object)
    read = outputs["note_tokens"].numpy()[0]
    assert read.tolist() == [t.encode() for t in vocabulary[whole]]
    assert outputs["truncated"].numpy().tolist() == [True]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A run folder whose model reads 3 events and 4 note tokens, and a
    long-format folder of its synthetic patients."""
    config = registry.get("ehr").tiny_config()
    config = config.replace(max_events=3, max_note_tokens=4)
    patients = make_synthetic_patients(24, seed=3)
    run = tmp_path_factory.mktemp("run")
    RiskModel(config).fit(patients.records, checkpoint_dir=run, verbose=0)
    data = tmp_path_factory.mktemp("records")
    save_synthetic_long_format(patients, data)
    return run, data, patients


def test_explain_warns_of_a_record_the_model_read_part_of(
    small_run, tmp_path, capsys
):
    run, data, patients = small_run
    records = patients.records
    row = next(
        i
        for i, codes in enumerate(records.codes)
        if len(codes) > 3 and records.notes[i]
    )
    patient = records.patient_ids[row]
    argv = ["explain", str(run), "--patient", patient, "--data", str(data)]
    assert cli.main([*argv, "--out", str(tmp_path / "r.html")]) == 0
    (warning,) = capsys.readouterr().err.strip().splitlines()
    assert warning.startswith(
        f"attention-zoo explain: warning: patient {patient}: the model read "
        f"only the last 3 of {len(records.codes[row])} events (max_events) "
        "and the last 4 of "
    )
    assert "note tokens (max_note_tokens)" in warning
