"""Versions and faults, with a server in a subprocess and real clients.

A new version written under load is picked up with zero failed requests;
a corrupt version folder leaves the old version serving; SIGKILL under
load then a restart gives clients connection errors, never a wrong
answer. The models are tiny `y = factor * x` SavedModels, so every answer
says which version gave it. Every load loop is bounded in count and time
and talks to 127.0.0.1 only.
"""

import os
import threading
import time

import numpy as np
import pytest

from attention_zoo.serving.process import ServerProcess
from tests.support import scaling_models

X = [1.0, 2.0, 3.0]


class Load:
    """Client threads sending `predict` requests until stopped (at most
    `max_requests` each, `max_seconds` in all); every answer recorded as
    `(status, factor or None)` where factor is `y / x`."""

    def __init__(self, send, clients=4, max_requests=2000, max_seconds=90):
        self.answers = [[] for _ in range(clients)]
        self._send = send
        self._stop = threading.Event()
        self._deadline = time.monotonic() + max_seconds
        self._threads = [
            threading.Thread(target=self._client, args=(i, max_requests))
            for i in range(clients)
        ]
        for thread in self._threads:
            thread.start()

    def _client(self, index, max_requests):
        for _ in range(max_requests):
            if self._stop.is_set() or time.monotonic() > self._deadline:
                return
            answer = self._send()
            self.answers[index].append(answer)
            if answer[0] != 200:
                time.sleep(0.05)  # a dead server is not hammered

    def count(self):
        return sum(len(answers) for answers in self.answers)

    def successes(self):
        return sum(a[0] == 200 for answers in self.answers for a in answers)

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(120)

    def all_answers(self):
        return [answer for answers in self.answers for answer in answers]


def factor(y):
    """The model's factor from its answer to `X`, or "wrong"."""
    ratios = np.asarray(y, np.float64) / np.asarray(X)
    if np.allclose(ratios, ratios[0]) and ratios[0] in (1.0, 2.0):
        return float(ratios[0])
    return "wrong"


def rest_sender(server):
    def send():
        try:
            status, body = server.rest(
                "/v1/models/scale:predict", {"instances": X}, timeout=30
            )
        except OSError as error:  # refused, reset
            return ("connection", type(error).__name__)
        if status != 200:
            return (status, body.get("error"))
        return (200, factor(body["predictions"]))

    return send


def grpc_sender(server):
    import grpc
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    channel = server.channel()
    stub = server.prediction_stub(channel)

    def send():
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "scale"
        request.inputs["x"].CopyFrom(
            tf.make_tensor_proto(np.asarray(X, np.float32))
        )
        try:
            response = stub.Predict(request, timeout=10)
        except grpc.RpcError as error:
            return ("grpc", error.code().name)
        y = tf.make_ndarray(response.outputs["y"])
        found = factor(y)
        if found != "wrong" and found != response.model_spec.version.value:
            return (200, "wrong")  # an answer not of the version named
        return (200, found)

    return send


@pytest.fixture
def base_path(tmp_path):
    base = tmp_path / "scale"
    scaling_models.save_scaling_model(str(base / "1"), 1.0)
    return base


def status_of(server, version):
    status, body = server.rest(f"/v1/models/scale/versions/{version}")
    return body["model_version_status"][0] if status == 200 else None


def test_a_new_version_under_load_is_served_with_zero_failures(base_path):
    with ServerProcess(
        [
            f"--model_base_path={base_path}",
            "--model_name=scale",
            "--file_system_poll_wait_seconds=0.2",
        ]
    ) as server:
        load = Load(rest_sender(server))
        server.wait_for(lambda: load.count() > 40, what="requests")
        scaling_models.save_scaling_model(str(base_path / "2"), 2.0)
        server.wait_for(
            lambda: (status_of(server, 2) or {}).get("state") == "AVAILABLE",
            what="version 2",
        )
        before = load.count()
        server.wait_for(lambda: load.count() > before + 40, what="requests")
        load.stop()
        _, status = server.rest("/v1/models/scale")
    answers = load.all_answers()
    assert set(answers) <= {(200, 1.0), (200, 2.0)}, set(answers)
    assert (200, 1.0) in answers and (200, 2.0) in answers
    for client in load.answers:  # once a client saw version 2, only 2
        factors = [found for _, found in client]
        if 2.0 in factors:
            assert 1.0 not in factors[factors.index(2.0) :]
    versions = {
        entry["version"]: entry["state"]
        for entry in status["model_version_status"]
    }
    assert versions == {"2": "AVAILABLE", "1": "END"}


def test_a_corrupt_version_folder_leaves_the_old_version_serving(base_path):
    with ServerProcess(
        [
            f"--model_base_path={base_path}",
            "--model_name=scale",
            "--file_system_poll_wait_seconds=0.2",
        ]
    ) as server:
        corrupt = base_path / "2"
        hidden = base_path / ".2.partial"
        hidden.mkdir()
        (hidden / "saved_model.pb").write_bytes(b"not a SavedModel")
        os.rename(hidden, corrupt)
        server.wait_for(
            lambda: (status_of(server, 2) or {}).get("state") == "END",
            what="version 2 to fail",
        )
        failed = status_of(server, 2)
        assert failed["status"]["error_code"] != "OK"
        assert failed["status"]["error_message"]
        status, body = server.rest("/v1/models/scale:predict", {"instances": X})
        assert status == 200 and factor(body["predictions"]) == 1.0
        assert status_of(server, 1)["state"] == "AVAILABLE"
        assert "failed to load" in server.output()
        # Rewritten in place, it is tried again and served.
        for name in os.listdir(corrupt):
            os.unlink(corrupt / name)
        os.rmdir(corrupt)
        scaling_models.save_scaling_model(str(corrupt), 2.0)
        server.wait_for(
            lambda: (status_of(server, 2) or {}).get("state") == "AVAILABLE",
            what="the rewritten version 2",
        )
        status, body = server.rest("/v1/models/scale:predict", {"instances": X})
        assert factor(body["predictions"]) == 2.0


@pytest.mark.slow  # benchmarks.serving_faults kills and restarts too
def test_sigkill_under_load_then_restart_never_answers_wrong(base_path):
    args = [f"--model_base_path={base_path}", "--model_name=scale"]
    server = ServerProcess(args)
    ports = dict(grpc_port=server.grpc_port, rest_port=server.rest_port)
    send = grpc_sender(server)
    load = Load(send, clients=4, max_seconds=120)
    try:
        server.wait_for(lambda: load.count() > 40, what="requests")
        server.kill()
        failed = load.count() - load.successes()
        server.wait_for(  # clients meet the dead server
            lambda: load.count() - load.successes() > failed,
            what="a failed request",
        )
        failed_before_restart = sum(
            1 for status, _ in load.all_answers() if status != 200
        )
        server = ServerProcess(args, **ports)
        before = load.successes()
        server.wait_for(lambda: load.successes() > before + 40, what="answers")
    finally:
        load.stop()
        server.stop()
    answers = load.all_answers()
    wrong = [a for a in answers if a[0] == 200 and a[1] != 1.0]
    failed = [a for a in answers if a[0] != 200]
    assert wrong == []
    assert failed_before_restart > 0  # the kill was seen
    assert {kind for kind, _ in failed} == {"grpc"}
    # Every client is answered again after the restart.
    assert all(client[-1] == (200, 1.0) for client in load.answers)
