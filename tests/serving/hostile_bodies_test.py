"""Hostile REST bodies get TF Serving's `{"error": ...}` with a 4xx, never
a 500: too deep, too large numbers, lone surrogates, too many examples
(the REST app in process, over a stand-in model; `stand_in_server`)."""

import json
import urllib.error
import urllib.request

import pytest
import tensorflow as tf

from attention_zoo.export import rest
from attention_zoo.serving import rest_api
from tests.support import stand_in_server


@pytest.fixture(scope="module")
def port():
    server = stand_in_server.StandInServer()
    server.gate.set()
    app = rest_api.make_app(server, max_request_bytes=1 << 20)
    with stand_in_server.rest_app(app) as port:
        yield port


def post(port, raw):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/models/m:predict", data=raw
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def nested(depth, leaf=b'"a"', open_=b"[", close=b"]"):
    return open_ * depth + leaf + close * depth


@pytest.mark.parametrize(
    "raw, message",
    [
        (b'{"instances": ' + nested(100000) + b"}", "over 64 levels deep"),
        (
            b'{"instances": ' + nested(5000, b"1", b'{"a":', b"}") + b"}",
            "over 64 levels deep",
        ),
        (b'{"inputs": {"x": ' + nested(60) + b"}}", "at most 32 dimensions"),
        (  # deep in a key the server does not read
            b'{"instances": ["a"], "x": ' + nested(900) + b"}",
            "over 64 levels deep",
        ),
        (b'{"instances": [' + b"9" * 5000 + b"]}", "JSON Parse error"),
        (b'{"instances": ["\\ud800"]}', "is not valid Unicode"),
        (b'{"instances": [1e999]}', "is not of expected type: string"),
        (b'{"instances": ["\xff"]}', "not valid UTF-8"),
        (b"[" * 3 + b"]" * 3, "Is not object"),
    ],
    ids=[
        "deep-arrays",
        "deep-objects",
        "deep-input",
        "deep-unread-key",
        "5000-digits",
        "lone-surrogate",
        "infinity",
        "not-utf8",
        "not-an-object",
    ],
)
def test_a_hostile_body_is_400_and_the_server_stays_up(port, raw, message):
    status, answer = post(port, raw)
    assert status == 400, answer
    assert message in answer["error"], answer
    status, answer = post(port, b'{"instances": ["a"]}')
    assert (status, answer) == (200, {"predictions": ["a"]})


def test_an_error_quotes_a_large_body_cut_short(port):
    status, answer = post(
        port, json.dumps({"instances": "a" * 100000}).encode()
    )
    assert status == 400
    assert "Excepting 'instances' to be an list/array" in answer["error"]
    assert len(answer["error"]) < 2000
    assert "... (100016 characters)" in answer["error"]


def test_the_batch_size_is_checked_before_the_values_are_read():
    specs = {"x": tf.TensorSpec([None], tf.string)}
    sizes = []

    def refuse(size):
        sizes.append(size)
        raise rest.RequestError(f"{size} examples")

    body = {"instances": ["a", {"b64": "!"}, 3]}  # never read
    with pytest.raises(rest.RequestError, match="3 examples"):
        rest.read_predict_body(body, specs, refuse)
    with pytest.raises(rest.RequestError, match="2 examples"):
        rest.read_predict_body({"inputs": {"x": [1, 2]}}, specs, refuse)
    assert sizes == [3, 2]
