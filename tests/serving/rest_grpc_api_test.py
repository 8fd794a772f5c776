"""`attention-zoo serve` answers as TF Serving does, to real clients.

One server in a subprocess serves an export of every application (the
tiny bundles of `tests/support/tiny_bundles.py`), named in a
`--model_config_file`, with batching and the Prometheus page on. Plain
HTTP requests and the official `PredictionServiceStub` get what the
signature gives in process (`predict_request` for REST's JSON); bad
requests get a 4xx (or a gRPC status) and the server keeps answering; an
empty entailment premise is a 400 naming it, and a pair cut to the
tokens the model reads comes back `truncated`.

The same server serves the tiny translator exported to sample
(`translation_sampled`): a text with a seed gets the same translation
alone, batched with other clients' requests or in one request with
others, and the same as `translate(..., seed=[...])` in Python.
"""

import concurrent.futures
import json
import shutil
import subprocess

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import get_model_metadata_pb2
from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.apis import predict_pb2

from attention_zoo.export.rest import predict_request
from attention_zoo.serving.process import ServerProcess
from attention_zoo_apps import registry
from tests.support import serving_page
from tests.support import tiny_bundles
from tests.support.shared_folders import copy_of

APPLICATIONS = tiny_bundles.APPLICATIONS
MAX_BYTES = 1 << 20
MAX_BATCH = 16
SAMPLING = {"sampling": "top_p", "top_p": 0.95, "temperature": 1.5}
SAMPLED = "/v1/models/translation_sampled:predict"
PREMISE = "the old sad dirty bird stands"
HYPOTHESIS = "the old sad duck stands"
LONG = " ".join([PREMISE] * 10)  # more tokens than the tiny model reads


@pytest.fixture(scope="module")
def served(tmp_path_factory, shared):
    """`(server, application -> loaded export)`: each application's
    `tiny_bundles.tiny_export` (default `jit_compile`) copied in as its
    version 1, and `translation_sampled`."""
    root = tmp_path_factory.mktemp("served")
    models, configs = {}, []
    for application in APPLICATIONS:
        path = root / application / "1"
        copy_of(tiny_bundles.tiny_export(shared, application), path)
        models[application] = tiny_bundles.loaded_export(shared, application)
        configs.append(
            f'config {{ name: "{application}" base_path: '
            f'"{root / application}" model_platform: "tensorflow" }}'
        )
    # The tiny translator (`tiny_bundles.tiny_bundle`) exported to sample.
    translator = tiny_bundles.tiny_bundle("translation", shared)
    translator.export(str(root / "translation_sampled" / "1"), **SAMPLING)
    configs.append(
        'config { name: "translation_sampled" base_path: '
        f'"{root / "translation_sampled"}" model_platform: "tensorflow" }}'
    )
    config = root / "models.config"
    config.write_text("model_config_list {\n" + "\n".join(configs) + "\n}\n")
    batching = root / "batching.config"
    batching.write_text(
        f"max_batch_size {{ value: {MAX_BATCH} }}\n"
        "batch_timeout_micros { value: 2000 }\n"
        "num_batch_threads { value: 2 }\n"
    )
    monitoring = root / "monitoring.config"
    monitoring.write_text("prometheus_config { enable: true }\n")
    with ServerProcess(
        [
            f"--model_config_file={config}",
            "--enable_batching",
            f"--batching_parameters_file={batching}",
            f"--monitoring_config_file={monitoring}",
            f"--max_request_bytes={MAX_BYTES}",
        ]
    ) as server:
        yield server, models


def in_process(model, columns):
    signature = model.signatures["serving_default"]
    inputs = tiny_bundles.signature_inputs(signature, columns)
    return {k: v.numpy() for k, v in signature(**inputs).items()}


@pytest.mark.parametrize("application", APPLICATIONS)
@pytest.mark.parametrize("layout", ["instances", "inputs"])
def test_rest_predict_answers_what_the_signature_gives(
    served, application, layout
):
    server, models = served
    columns = tiny_bundles.columnar_inputs(application)
    body = (
        {"instances": tiny_bundles.row_instances(columns)}
        if layout == "instances"
        else {"inputs": columns}
    )
    status, answer = server.rest(f"/v1/models/{application}:predict", body)
    assert status == 200, answer
    assert answer == json.loads(
        json.dumps(predict_request(models[application], body))
    )
    status, by_version = server.rest(
        f"/v1/models/{application}/versions/1:predict", body
    )
    assert (status, by_version) == (200, answer)


def tensor_request(models, application, columns):
    """A gRPC `PredictRequest` of the columnar inputs."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = application
    signature = models[application].signatures["serving_default"]
    model_inputs = tiny_bundles.signature_inputs(signature, columns)
    for name, tensor in model_inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(tensor.numpy()))
    return request


@pytest.fixture(scope="module")
def stub(served):
    """The official stubs: `(PredictionServiceStub, ModelServiceStub)`."""
    server, _ = served
    channel = server.channel()
    yield server.prediction_stub(channel), server.model_stub(channel)
    channel.close()


@pytest.mark.parametrize("application", APPLICATIONS)
def test_grpc_predict_answers_what_the_signature_gives(
    served, stub, application
):
    _, models = served
    columns = tiny_bundles.columnar_inputs(application)
    response = stub[0].Predict(
        tensor_request(models, application, columns), timeout=60
    )
    expected = in_process(models[application], columns)
    assert response.model_spec.name == application
    assert response.model_spec.version.value == 1
    assert response.model_spec.signature_name == "serving_default"
    assert set(response.outputs) == set(expected)
    for name, value in expected.items():
        got = tf.make_ndarray(response.outputs[name])
        if value.dtype == object:
            assert got.tolist() == value.tolist(), name
        else:
            np.testing.assert_allclose(got, value, atol=1e-6, err_msg=name)


def test_grpc_output_filter(served, stub):
    request = tensor_request(
        served[1],
        "translation",
        tiny_bundles.columnar_inputs("translation"),
    )
    request.output_filter.append("translation")
    response = stub[0].Predict(request, timeout=60)
    assert list(response.outputs) == ["translation"]


def test_status_as_tf_serving_writes_it(served, stub):
    server, _ = served
    expected = {
        "model_version_status": [
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }
    assert server.rest("/v1/models/entailment") == (200, expected)
    assert server.rest("/v1/models/entailment/versions/1") == (200, expected)
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "entailment"
    response = stub[1].GetModelStatus(request, timeout=30)
    (entry,) = response.model_version_status
    assert entry.version == 1
    assert entry.state == get_model_status_pb2.ModelVersionStatus.AVAILABLE


def test_metadata_gives_the_signature_defs(served, stub):
    server, _ = served
    status, answer = server.rest("/v1/models/entailment/metadata")
    assert status == 200
    assert answer["model_spec"]["name"] == "entailment"
    assert answer["model_spec"]["version"] == "1"
    default = answer["metadata"]["signature_def"]["signature_def"][
        "serving_default"
    ]
    assert set(default["inputs"]) == {"premise", "hypothesis"}
    request = get_model_metadata_pb2.GetModelMetadataRequest()
    request.model_spec.name = "entailment"
    request.metadata_field.append("signature_def")
    response = stub[0].GetModelMetadata(request, timeout=30)
    signature_defs = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signature_defs)
    assert set(signature_defs.signature_def["serving_default"].inputs) == {
        "premise",
        "hypothesis",
    }


def test_concurrent_requests_are_batched_and_answered_each_their_own(
    served,
):
    """Eight clients at once: each gets the translation it gets alone."""
    server, models = served
    (pairs,) = registry.get("translation").fit_arguments(8, seed=11)
    texts = [source for source, _ in pairs]
    alone = [
        in_process(models["translation"], {"text": [text]})["translation"][0]
        for text in texts
    ]

    def send(text):
        return server.rest(
            "/v1/models/translation:predict", {"instances": [text]}
        )

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, texts))
    for (status, answer), expected in zip(answers, alone):
        assert status == 200, answer
        (prediction,) = answer["predictions"]
        assert prediction["translation"] == expected.decode("utf-8")


@pytest.mark.parametrize(
    "path, body, status, message",
    [
        ("/v1/models/entailment:predict", b"{not json", 400, "JSON Parse"),
        (
            "/v1/models/entailment:predict",
            b'{"instances": ["\xff\xfe"]}',
            400,
            "UTF-8",
        ),
        (
            "/v1/models/entailment:predict",
            {"instances": [{"premise": 1.5, "hypothesis": "a"}]},
            400,
            "is not of expected type: string",
        ),
        (
            "/v1/models/entailment:predict",
            {"instances": [{"premise": "a man"}]},
            400,
            "keys must be equal",
        ),
        (
            "/v1/models/entailment:predict",
            {"inputs": {"premise": [["a"]], "hypothesis": [["b"]]}},
            400,
            "shape",
        ),
        ("/v1/models/entailment:predict", {"instances": []}, 400, "No values"),
        (
            "/v1/models/nothing:predict",
            {"instances": ["a"]},
            404,
            "Servable not found",
        ),
        (
            "/v1/models/entailment/versions/7:predict",
            {"instances": [{"premise": "a", "hypothesis": "b"}]},
            404,
            "Specific(entailment, 7)",
        ),
        (
            "/v1/models/entailment:predict",
            {
                "instances": [{"premise": "a", "hypothesis": "b"}]
                * (MAX_BATCH + 1)
            },
            400,
            f"over the limit of {MAX_BATCH} examples",
        ),
        (
            "/v1/models/entailment:predict",
            {"instances": [{"premise": "a" * MAX_BYTES, "hypothesis": "b"}]},
            413,
            f"limit of {MAX_BYTES} bytes",
        ),
        (
            "/v1/models/entailment:explode",
            {"instances": []},
            400,
            "Malformed request",
        ),
        ("/v1/models/entailment", None, 200, None),
    ],
)
def test_bad_rest_requests_are_4xx_and_the_server_stays_up(
    served, path, body, status, message
):
    server, _ = served
    raw = body if isinstance(body, bytes) else None
    got, answer = server.rest(path, None if raw else body, raw=raw)
    assert got == status, answer
    if message is not None:
        assert message in answer["error"], answer
    ok, _ = server.rest(
        "/v1/models/entailment:predict",
        {"instances": [{"premise": "a man", "hypothesis": "a person"}]},
    )
    assert ok == 200


def grpc_error(call, request):
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=30)
    return caught.value.code(), caught.value.details()


def test_bad_grpc_requests_get_tf_servings_status_codes(served, stub):
    predict = stub[0].Predict
    good = tensor_request(
        served[1], "entailment", tiny_bundles.columnar_inputs("entailment")
    )
    unknown = predict_pb2.PredictRequest()
    unknown.CopyFrom(good)
    unknown.model_spec.name = "nothing"
    assert grpc_error(predict, unknown)[0] == grpc.StatusCode.NOT_FOUND
    wrong_dtype = predict_pb2.PredictRequest()
    wrong_dtype.CopyFrom(good)
    wrong_dtype.inputs["premise"].CopyFrom(
        tf.make_tensor_proto(np.ones(2, np.float32))
    )
    code, details = grpc_error(predict, wrong_dtype)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "premise" in details
    missing = predict_pb2.PredictRequest()
    missing.CopyFrom(good)
    del missing.inputs["hypothesis"]
    code, details = grpc_error(predict, missing)
    assert "Missing but required: {hypothesis}" in details
    empty = predict_pb2.PredictRequest()
    empty.CopyFrom(good)
    for name in ("premise", "hypothesis"):
        empty.inputs[name].CopyFrom(
            tf.make_tensor_proto(np.array([], dtype=object), tf.string)
        )
    code, details = grpc_error(predict, empty)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "empty" in details
    huge = predict_pb2.PredictRequest()
    huge.CopyFrom(good)
    huge.inputs["premise"].CopyFrom(
        tf.make_tensor_proto(np.array([b"a" * MAX_BYTES] * 2, dtype=object))
    )
    assert grpc_error(predict, huge)[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert predict(good, timeout=60).model_spec.version.value == 1


def test_the_prometheus_page_counts_requests(served):
    server, _ = served
    server.rest(
        "/v1/models/entailment:predict",
        {"instances": [{"premise": "a man", "hypothesis": "a person"}]},
    )
    page = server.text("/monitoring/prometheus/metrics")
    assert 'model_name="entailment"' in page
    assert ":tensorflow:serving:request_count" in page
    assert "batch" in page


@pytest.mark.skipif(
    not (shutil.which("curl") and shutil.which("jq")),
    reason="the serving page's examples need curl and jq (CI installs them)",
)
def test_the_serving_pages_curl_examples_run_as_written(served, tmp_path):
    server, _ = served
    serving_page.write_shapes_image(tmp_path)
    url = f"http://127.0.0.1:{server.rest_port}"
    examples = serving_page.curl_examples()
    assert sorted({e[0] for e in examples}) == sorted(APPLICATIONS)
    for application, command, shown in examples:
        assert serving_page.PAGE_URL in command, command
        run = subprocess.run(
            ["bash", "-c", command.replace(serving_page.PAGE_URL, url)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, (command, run.stderr)
        answer = json.loads(run.stdout)
        assert "error" not in answer, (application, answer)
        assert serving_page.layout(answer) == serving_page.layout(shown), (
            application,
            answer,
        )


def test_over_rest_an_empty_premise_is_a_400_naming_it(served):
    server, _ = served
    url = "/v1/models/entailment:predict"
    status, answer = server.rest(
        url, {"instances": [{"premise": "", "hypothesis": HYPOTHESIS}]}
    )
    assert status == 400, answer
    assert "`premise` must not be empty" in answer["error"]
    status, answer = server.rest(
        url,
        {
            "inputs": {
                "premise": [LONG, PREMISE],
                "hypothesis": [HYPOTHESIS, HYPOTHESIS],
            }
        },
    )
    assert status == 200, answer
    assert answer["outputs"]["truncated"] == [True, False]


# -- a translation export that samples ----------------------------------


@pytest.fixture(scope="module")
def sampled_texts():
    (pairs,) = registry.get("translation").fit_arguments(8, seed=11)
    return [source for source, _ in pairs]


def _seeded(server, instances):
    status, answer = server.rest(
        SAMPLED, {"signature_name": "seeded", "instances": instances}
    )
    assert status == 200, answer
    return [p["translation"] for p in answer["predictions"]]


def test_a_seed_draws_alike_alone_batched_and_in_python(
    served, shared, sampled_texts
):
    server, _ = served
    translator = tiny_bundles.tiny_bundle("translation", shared)
    seeds = [7, 2**32 - 1, 0, 99, 7, 12, 123456, 5]
    expected = translator.translate(sampled_texts, seed=seeds, **SAMPLING)
    instances = [{"text": t, "seed": s} for t, s in zip(sampled_texts, seeds)]
    # One request with all eight.
    assert _seeded(server, instances) == expected
    # Eight clients at once: the server batches them as it likes.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda x: _seeded(server, [x]), instances))
    assert [answer[0] for answer in answers] == expected


def test_serving_default_returns_the_seeds_it_drew(served, sampled_texts):
    server, _ = served
    status, answer = server.rest(SAMPLED, {"instances": sampled_texts[:3]})
    assert status == 200, answer
    predictions = answer["predictions"]
    assert all(0 <= p["seed"] < 2**32 for p in predictions)
    again = _seeded(
        server,
        [
            {"text": t, "seed": p["seed"]}
            for t, p in zip(sampled_texts, predictions)
        ],
    )
    assert again == [p["translation"] for p in predictions]
