"""TF Serving's warm-up requests (`assets.extra/tf_serving_warmup_requests`):
the file is TFRecords of the official `PredictionLog` proto, reads back as
written, is refused past TF Serving's limit or when a record is corrupt,
and every export (of the tiny bundles, and the shipped models) carries one
request per input bucket that replays on the loaded export."""

import copy
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the exports' ops)
from tensorflow_serving.apis import classification_pb2
from tensorflow_serving.apis import prediction_log_pb2

from attention_zoo.buckets import bucket_length
from attention_zoo.export import MAX_WARMUP_RECORDS
from attention_zoo.export import WARMUP_FILE
from attention_zoo.export import read_warmup_requests
from attention_zoo.export import save_export
from attention_zoo.export import write_warmup_requests
from attention_zoo_apps.common import zoo
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.ehr.encoding import LENGTH_MULTIPLE as EHR_MULTIPLE
from tests.support.tiny_bundles import APPLICATIONS
from tests.support.tiny_bundles import StandInBundle
from tests.support.tiny_bundles import tiny_bundle
from tests.support.tiny_bundles import tiny_export

SHIPPED = {model.name: model for model in zoo.shipped_models()}

REQUESTS = [
    (
        "serving_default",
        {"text": np.array(["¿Dónde?".encode(), b"hi"], dtype=object)},
    ),
    (
        "score",
        {
            "x": np.arange(6, dtype="float32").reshape(2, 3),
            "n": np.array([3], "int32"),
        },
    ),
]


def _assert_same_requests(found, expected):
    assert [name for name, _ in found] == [name for name, _ in expected]
    for (_, got), (_, want) in zip(found, expected):
        assert sorted(got) == sorted(want)
        for key in want:
            assert got[key].dtype == want[key].dtype, key
            np.testing.assert_array_equal(got[key], want[key])


def _records(path):
    return [record.numpy() for record in tf.data.TFRecordDataset(path)]


def _write_records(path, records):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)


def _predict_log(text=b"x"):
    log = prediction_log_pb2.PredictionLog()
    request = log.predict_log.request
    request.model_spec.signature_name = "serving_default"
    request.inputs["text"].CopyFrom(tf.make_tensor_proto([text]))
    return log.SerializeToString()


# -- the file ---------------------------------------------------------------


def test_written_requests_read_back(tmp_path):
    path = write_warmup_requests(str(tmp_path), REQUESTS)
    assert path == os.path.join(str(tmp_path), WARMUP_FILE)
    _assert_same_requests(read_warmup_requests(str(tmp_path)), REQUESTS)
    assert not os.path.exists(path + ".partial")


def test_the_file_is_prediction_logs_of_predict_requests(tmp_path):
    path = write_warmup_requests(str(tmp_path), REQUESTS, model_name="toy")
    assert path.endswith("assets.extra/tf_serving_warmup_requests")
    logs = [
        prediction_log_pb2.PredictionLog.FromString(r) for r in _records(path)
    ]
    assert len(logs) == 2
    assert all(log.WhichOneof("log_type") == "predict_log" for log in logs)
    first, second = (log.predict_log.request for log in logs)
    assert first.model_spec.name == "toy"
    assert first.model_spec.signature_name == "serving_default"
    assert second.model_spec.signature_name == "score"
    text = first.inputs["text"]
    assert text.dtype == tf.string.as_datatype_enum
    assert [d.size for d in text.tensor_shape.dim] == [2]
    assert list(text.string_val) == ["¿Dónde?".encode(), b"hi"]
    x = second.inputs["x"]
    assert x.dtype == tf.float32.as_datatype_enum
    assert [d.size for d in x.tensor_shape.dim] == [2, 3]
    assert second.inputs["n"].dtype == tf.int32.as_datatype_enum


def test_no_file_is_no_requests(tmp_path):
    assert read_warmup_requests(str(tmp_path)) == []


def test_a_request_without_a_signature_name_is_serving_default(tmp_path):
    log = prediction_log_pb2.PredictionLog()
    log.predict_log.request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0]))
    _write_records(str(tmp_path / WARMUP_FILE), [log.SerializeToString()])
    ((name, inputs),) = read_warmup_requests(str(tmp_path))
    assert name == "serving_default"
    np.testing.assert_array_equal(inputs["x"], [1.0])


def test_more_requests_than_tf_serving_replays_are_refused(tmp_path):
    request = ("serving_default", {"x": np.zeros([1], "float32")})
    with pytest.raises(ValueError, match=f"at most {MAX_WARMUP_RECORDS}"):
        write_warmup_requests(
            str(tmp_path), [request] * (MAX_WARMUP_RECORDS + 1)
        )
    assert not os.path.exists(tmp_path / WARMUP_FILE)
    write_warmup_requests(str(tmp_path), [request] * MAX_WARMUP_RECORDS)
    assert len(read_warmup_requests(str(tmp_path))) == MAX_WARMUP_RECORDS
    path = str(tmp_path / WARMUP_FILE)
    _write_records(path, [_predict_log()] * (MAX_WARMUP_RECORDS + 1))
    with pytest.raises(ValueError) as caught:
        read_warmup_requests(str(tmp_path))
    assert "exceeds the maximum (1000)" in str(caught.value)
    assert path in str(caught.value)


@pytest.mark.parametrize(
    "request_",
    [
        ["serving_default"],
        ("serving_default", {}),
        (None, {"x": np.zeros([1])}),
        ("serving_default", [np.zeros([1])]),
    ],
)
def test_a_malformed_request_is_refused(tmp_path, request_):
    good = ("serving_default", {"x": np.zeros([1], "float32")})
    with pytest.raises(ValueError, match="index 1"):
        write_warmup_requests(str(tmp_path), [good, request_])
    assert not os.path.exists(tmp_path / WARMUP_FILE)


def test_a_record_that_does_not_parse_names_the_file_and_record(tmp_path):
    path = str(tmp_path / WARMUP_FILE)
    _write_records(path, [_predict_log(), b"\xff\xff\xff\xff"])
    with pytest.raises(ValueError) as caught:
        read_warmup_requests(str(tmp_path))
    assert f"{path}: record 1 is not a PredictionLog" in str(caught.value)


def test_a_corrupt_tfrecord_names_the_file_and_record(tmp_path):
    path = write_warmup_requests(str(tmp_path), REQUESTS)
    with open(path, "r+b") as f:  # the second record's data checksum
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))
    with pytest.raises(ValueError) as caught:
        read_warmup_requests(str(tmp_path))
    assert f"{path}: record 1 is not a readable TFRecord" in str(caught.value)


def test_logs_other_than_predict_logs_are_refused(tmp_path):
    path = str(tmp_path / WARMUP_FILE)
    classify = prediction_log_pb2.PredictionLog(
        classify_log=prediction_log_pb2.ClassifyLog(
            request=classification_pb2.ClassificationRequest()
        )
    )
    _write_records(path, [_predict_log(), classify.SerializeToString()])
    with pytest.raises(ValueError, match="record 1 is a classify_log;"):
        read_warmup_requests(str(tmp_path))
    _write_records(path, [b""])  # parses: a log without a request
    with pytest.raises(ValueError, match="record 0 is an empty PredictionLog"):
        read_warmup_requests(str(tmp_path))


# -- save_export ------------------------------------------------------------


class _Doubling(tf.Module):
    @tf.function(
        input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")]
    )
    def serve(self, x):
        return {"y": 2.0 * x}


def test_save_export_writes_the_requests_in_the_version(tmp_path):
    path = str(tmp_path / "toy" / "1")
    inputs = {"x": np.ones([1, 3], "float32")}
    save_export(
        StandInBundle("toy"),
        _Doubling(),
        path,
        jit_compile=False,
        warmup_requests=[("serving_default", inputs)],
    )
    assert os.path.isfile(os.path.join(path, WARMUP_FILE))
    ((name, read),) = read_warmup_requests(path)
    served = tf.saved_model.load(path).signatures[name](**read)
    np.testing.assert_array_equal(served["y"], [[2.0, 2.0, 2.0]])
    # A version is never replaced: the next one, without warm-up requests.
    path = str(tmp_path / "toy" / "2")
    save_export(StandInBundle("toy"), _Doubling(), path, jit_compile=False)
    assert not os.path.exists(os.path.join(path, WARMUP_FILE))


@pytest.mark.parametrize(
    "request_, message",
    [
        (("encode", {"x": np.ones([1, 3])}), "names the signature 'encode'"),
        (
            ("serving_default", {"y": np.ones([1, 3])}),
            r"gives the inputs \['y'\]",
        ),
        (("serving_default", {"x": np.ones([3])}), "must have rank 2"),
    ],
)
def test_save_export_refuses_requests_its_signatures_would_fail(
    tmp_path, request_, message
):
    path = str(tmp_path / "toy" / "1")
    with pytest.raises(ValueError, match=message):
        save_export(
            StandInBundle("toy"),
            _Doubling(),
            path,
            False,
            warmup_requests=[request_],
        )
    assert not os.path.exists(path)


# -- the applications' exports ----------------------------------------------


@pytest.fixture(scope="module")
def exported(shared):
    """`exported(application)`: the version folder of its tiny bundle's
    export without XLA (`tiny_export`: made once per session, read-only).
    """

    def export(application):
        return tiny_export(shared, application, jit_compile=False)

    return export


@pytest.fixture(scope="module")
def tiny(shared):
    """`tiny(application)`: the session's tiny bundle (`tiny_bundle`)."""
    return lambda application: tiny_bundle(application, shared)


def _replay(path, requests):
    """Calls the loaded export with every request; returns the outputs."""
    signatures = tf.saved_model.load(path).signatures
    return [
        signatures[name](**{key: tf.constant(v) for key, v in inputs.items()})
        for name, inputs in requests
    ]


def _token_buckets(tokenizer, texts, limit, multiple=8):
    """The length bucket of each text's ids, cut to `limit` ids."""
    lengths = tokenizer.tokenize(tf.constant(texts)).row_lengths().numpy()
    return [bucket_length(min(int(n), limit), multiple) for n in lengths]


def _all_buckets(limit, multiple):
    return list(range(multiple, bucket_length(limit, multiple) + 1, multiple))


@pytest.mark.parametrize("application", APPLICATIONS)
def test_every_export_replays_its_warmup_requests(exported, tiny, application):
    path = exported(application)
    assert os.path.isfile(os.path.join(path, WARMUP_FILE))
    requests = read_warmup_requests(path)
    expected = tiny(application).warmup_inputs()
    assert requests and len(requests) == len(expected)
    _assert_same_requests(
        requests, [("serving_default", inputs) for inputs in expected]
    )
    for _, inputs in requests:
        assert all(len(value) == 1 for value in inputs.values())  # batch 1
    outputs = _replay(path, requests)
    assert len(outputs) == len(requests)


def _with_config(bundle, **changes):
    """A shallow copy of `bundle` with a changed config (the cached tiny
    bundles stay as they are)."""
    bundle = copy.copy(bundle)
    bundle.config = bundle.config.replace(**changes)
    return bundle


@pytest.mark.parametrize("max_length", [12, 27])
def test_translation_texts_meet_each_length_bucket_once(tiny, max_length):
    translator = _with_config(tiny("translation"), max_length=max_length)
    texts = [i["text"][0].decode() for i in translator.warmup_inputs()]
    found = _token_buckets(translator.source_tokenizer, texts, max_length)
    assert found == _all_buckets(max_length, 8)


def test_entailment_pairs_meet_each_length_bucket_once(tiny):
    classifier = _with_config(tiny("entailment"), max_length=30)
    pairs = classifier.warmup_inputs()
    premises = [pair["premise"][0].decode() for pair in pairs]
    hypotheses = [pair["hypothesis"][0].decode() for pair in pairs]
    tokenizer = classifier.tokenizer
    longer = np.maximum(
        _token_buckets(tokenizer, premises, 30),
        _token_buckets(tokenizer, hypotheses, 30),
    )
    assert longer.tolist() == _all_buckets(30, classifier.length_multiple)


@pytest.mark.parametrize("use_notes", [True, False])
def test_ehr_patients_meet_each_event_bucket_once(tiny, use_notes):
    risk_model = _with_config(
        tiny("ehr"),
        max_events=40,
        max_note_tokens=20,
        use_notes=use_notes,
    )
    patients = risk_model.warmup_inputs()
    events = [int((p["codes"][0] != b"").sum()) for p in patients]
    assert [bucket_length(n, EHR_MULTIPLE) for n in events] == [16, 32, 48]
    for patient in patients:
        assert patient["times"].max() <= patient["prediction_time"][0]
        assert patient["codes"].shape == patient["values"].shape
    notes = [p["note"][0].decode() for p in patients]
    if use_notes:
        found = _token_buckets(
            risk_model.note_tokenizer, notes, 20, EHR_MULTIPLE
        )
        assert found == [16, 32, 32]
    else:
        assert notes == ["", "", ""]


def test_captioning_warms_up_with_one_decodable_image(tiny):
    (inputs,) = tiny("captioning").warmup_inputs()
    (image,) = inputs["image"]
    assert tf.io.decode_image(image).shape[-1] == 3


# -- the shipped models -----------------------------------------------------


def _shipped_buckets(path, application, requests):
    """The length buckets the shipped export's requests meet, by its own
    tokenizer, and all the buckets it has."""
    with open(os.path.join(path, "config.json")) as f:
        limit = json.load(f)["max_length"]
    folder = {"translation": "source_vocab", "entailment": "vocabulary"}
    tokenizer = SubwordTokenizer.load(os.path.join(path, folder[application]))
    first = {"translation": "text", "entailment": "premise"}[application]
    texts = [inputs[first][0].decode() for _, inputs in requests]
    return _token_buckets(tokenizer, texts, limit), _all_buckets(limit, 8)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_shipped_model_replays_its_warmup_requests(name):
    model = SHIPPED[name]
    requests = read_warmup_requests(model.version)
    assert requests, (
        f"{name} has no {WARMUP_FILE}: run "
        f"`python -m release.build_zoo --warmup-only {name}`"
    )
    assert os.path.getsize(os.path.join(model.version, WARMUP_FILE)) < 10_000
    assert {signature for signature, _ in requests} == {"serving_default"}
    if model.application == "captioning":
        assert len(requests) == 1
    else:
        found, buckets = _shipped_buckets(
            model.version, model.application, requests
        )
        assert found == buckets
    assert len(_replay(model.version, requests)) == len(requests)
