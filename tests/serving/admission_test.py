"""`RequestBudget`: the request bytes in flight are bounded, over both
APIs (the REST and gRPC servers in process, over a stand-in model whose
requests a test holds in flight)."""

import asyncio
import concurrent.futures
import json
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2

from attention_zoo.serving import rest_api
from attention_zoo.serving.admission import RequestBudget
from attention_zoo.serving.status import ServingError
from tests.support import stand_in_server


def test_requests_within_the_budget_run_at_once():
    budget = RequestBudget(100)
    first, second = budget.admit(60), budget.admit(40)
    first.wait(0), second.wait(0)
    assert budget.in_flight == 100
    first.release()
    first.release()  # idempotent
    assert budget.in_flight == 40


def test_over_the_budget_requests_wait_in_arrival_order():
    budget = RequestBudget(100)
    running = budget.admit(80)
    large, small = budget.admit(60), budget.admit(10)
    # The small one would fit, but waits behind the large one.
    assert budget.waiting == 2 and budget.in_flight == 80
    running.release()
    large.wait(0), small.wait(0)
    assert budget.in_flight == 70 and budget.waiting == 0


def test_a_full_line_and_a_long_wait_are_resource_exhausted():
    budget = RequestBudget(100)
    running = budget.admit(100)
    waiting = budget.admit(70)
    with pytest.raises(ServingError) as refused:
        budget.admit(40)  # 70 + 40 bytes would wait: over the budget
    assert refused.value.code == "RESOURCE_EXHAUSTED"
    assert refused.value.http_status == 429
    assert "--max_request_bytes_in_flight" in refused.value.message
    with pytest.raises(ServingError, match="waited 0.01 s"):
        waiting.wait(0.01)
    assert budget.waiting == 0
    running.release()
    assert budget.in_flight == 0


def test_a_request_over_the_whole_budget_runs_alone():
    budget = RequestBudget(100)
    budget.admit(500).wait(0)
    assert budget.in_flight == 500


def test_a_coroutine_waits_without_blocking_the_loop():
    budget = RequestBudget(100)
    running = budget.admit(100)

    async def main():
        ticket = budget.admit(50)
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, running.release)
        await ticket.wait_async(10)
        with pytest.raises(ServingError):
            await budget.admit(100).wait_async(0.01)
        return ticket

    ticket = asyncio.run(main())
    assert budget.in_flight == 50 and budget.waiting == 0
    ticket.release()
    assert budget.in_flight == 0


def post(port, body, timeout=stand_in_server.WAIT_SECONDS):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/models/m:predict",
        data=json.dumps(body).encode("utf-8"),
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_rest_large_requests_wait_then_run_past_the_budget_429():
    server = stand_in_server.StandInServer()
    budget = RequestBudget(1000)
    app = rest_api.make_app(server, max_request_bytes=1000, budget=budget)
    body = {"instances": ["a" * 600]}
    size = len(json.dumps(body))
    with (
        stand_in_server.rest_app(app) as port,
        concurrent.futures.ThreadPoolExecutor(2) as pool,
    ):
        first = pool.submit(post, port, body)
        stand_in_server.wait_until(lambda: server.model.running == 1, "a run")
        second = pool.submit(post, port, body)
        stand_in_server.wait_until(lambda: budget.waiting == 1, "a wait")
        # Not read yet: the waiting body is admitted by its Content-Length.
        assert budget.in_flight == size and server.model.running == 1
        status, answer = post(port, body)
        assert status == 429, answer
        assert "--max_request_bytes_in_flight" in answer["error"]
        server.gate.set()
        for future in (first, second):
            status, answer = future.result(stand_in_server.WAIT_SECONDS)
            assert status == 200, answer
            assert answer == {"predictions": ["a" * 600]}
    assert budget.in_flight == 0


def test_rest_a_request_that_times_out_keeps_its_bytes_until_it_ends():
    server = stand_in_server.StandInServer()
    budget = RequestBudget(1000)
    app = rest_api.make_app(
        server, timeout_ms=50, max_request_bytes=1000, budget=budget
    )
    with stand_in_server.rest_app(app) as port:
        status, answer = post(port, {"instances": ["a"]})
        assert status == 504, answer
        assert budget.in_flight > 0  # still running on its thread
        server.gate.set()
        stand_in_server.wait_until(lambda: budget.in_flight == 0, "the release")


def string_request(texts):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    request.inputs["x"].CopyFrom(
        tf.make_tensor_proto(np.array(texts, dtype=object))
    )
    return request


def test_grpc_large_requests_wait_then_resource_exhausted():
    server = stand_in_server.StandInServer()
    budget = RequestBudget(1000)
    request = string_request([b"a" * 600])
    with stand_in_server.grpc_app(server, 1000, budget) as stub:
        first = stub.Predict.future(request, timeout=30)
        stand_in_server.wait_until(lambda: server.model.running == 1, "a run")
        second = stub.Predict.future(request, timeout=30)
        stand_in_server.wait_until(lambda: budget.waiting == 1, "a wait")
        with pytest.raises(grpc.RpcError) as refused:
            stub.Predict(request, timeout=30)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max_request_bytes_in_flight" in refused.value.details()
        assert server.model.running == 1
        server.gate.set()
        for future in (first, second):
            answer = tf.make_ndarray(future.result(30).outputs["y"])
            assert answer.tolist() == [b"a" * 600]
    assert budget.in_flight == 0


def test_grpc_a_tensor_padded_past_the_limit_is_refused():
    """TF pads a short value list with its last value: 2000 copies of a
    1 kB string are 2 MB from a message of 1 kB."""
    server = stand_in_server.StandInServer()
    server.gate.set()
    bomb = predict_pb2.PredictRequest()
    bomb.model_spec.name = "m"
    bomb.inputs["x"].dtype = tf.string.as_datatype_enum
    bomb.inputs["x"].tensor_shape.dim.add().size = 2000
    bomb.inputs["x"].string_val.append(b"a" * 1000)
    with stand_in_server.grpc_app(server, 1 << 20) as stub:
        with pytest.raises(grpc.RpcError) as refused:
            stub.Predict(bomb, timeout=30)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "--max_request_bytes" in refused.value.details()
        assert server.model.running == 0
        fine = string_request([b"a" * 1000] * 20)
        answer = stub.Predict(fine, timeout=30).outputs["y"]
        assert tf.make_ndarray(answer).shape == (20,)
