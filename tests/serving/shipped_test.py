"""`attention-zoo serve NAME` serves a shipped model by name: its warm-up
requests are replayed before it answers, and its REST and gRPC answers
are what the export gives in process. The serving page's client snippet ("One
client for all of them") runs as written against the same server, over
REST and gRPC, and prints the translation the export gives.

The file's tests share one server of the shipped model (`server`)."""

import contextlib
import io
import re
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the export's ops)
from tensorflow_serving.apis import predict_pb2

from attention_zoo.export import read_warmup_requests
from attention_zoo.export import resolve_version
from attention_zoo.serving.process import ServerProcess
from attention_zoo_apps.common import zoo
from tests.support import serving_page

NAME = "translation-spa-eng"
TEXTS = ["¿Dónde está la biblioteca?", "Tengo dos gatos."]


@pytest.fixture(scope="module")
def version():
    return resolve_version(zoo.resolve(NAME))


@pytest.fixture(scope="module")
def signature(version):
    """The shipped export's signature, in process."""
    return tf.saved_model.load(version).signatures["serving_default"]


@pytest.fixture(scope="module")
def server():
    """`attention-zoo serve NAME`, as a user starts it."""
    command = [sys.executable, "-m", "attention_zoo_apps.cli", "serve"]
    with ServerProcess([NAME], command=command) as server:
        yield server


def test_a_shipped_model_served_by_name(version, signature, server):
    expected = signature(text=tf.constant(TEXTS))["translation"].numpy()
    warmups = len(read_warmup_requests(version))
    assert warmups > 0
    assert f"{warmups} warm-up requests replayed" in server.output()
    status, answer = server.rest(
        f"/v1/models/{NAME}:predict", {"instances": TEXTS}
    )
    assert status == 200, answer
    translations = [p["translation"] for p in answer["predictions"]]
    assert translations == [t.decode("utf-8") for t in expected]
    request = predict_pb2.PredictRequest()
    request.model_spec.name = NAME
    request.inputs["text"].CopyFrom(
        tf.make_tensor_proto(np.array(TEXTS, dtype=object))
    )
    with server.channel() as channel:
        stub = server.prediction_stub(channel)
        response = stub.Predict(request, timeout=60)
    got = tf.make_ndarray(response.outputs["translation"])
    assert got.tolist() == expected.tolist()


def client_snippet():
    text = serving_page.SERVING_PAGE.read_text()
    after = text.split("<!-- client snippet", 1)[1]
    return re.search(r"```py\n(.*?)```", after, re.S).group(1)


def test_the_serving_page_client_works_over_rest_and_grpc(
    signature, server, monkeypatch
):
    snippet = client_snippet()
    model = re.search(r'MODEL = "([^"]+)"', snippet).group(1)
    assert model == NAME  # the shipped model the server serves
    text = re.search(r'texts = \["([^"]+)"\]', snippet).group(1)
    expected = signature(text=tf.constant([text]))["translation"][0]
    monkeypatch.setenv("REST_URL", f"http://127.0.0.1:{server.rest_port}")
    monkeypatch.setenv("GRPC_TARGET", f"127.0.0.1:{server.grpc_port}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(snippet, "the serving page's client snippet", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines == [expected.numpy().decode("utf-8")] * 2
