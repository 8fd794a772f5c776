"""The REST and gRPC APIs in this process, over a stand-in model server.

For tests of the APIs' own work (reading bodies, admitting requests)
without TensorFlow loading a model: `StandInServer` answers one model,
`m`, whose signature takes a string input `x` (shape `[None]`) and
answers `{"y": x}`; its `predict` waits while `gate` is closed, so that
a test can hold requests in flight. `rest_app(app)` serves an aiohttp
application on a loopback port from a thread; `grpc_app(...)` starts the
gRPC server on one.
"""

import asyncio
import contextlib
import threading

import tensorflow as tf

from attention_zoo.serving import grpc_api
from attention_zoo.serving.metrics import ServingMetrics

WAIT_SECONDS = 30  # the longest any stand-in waits


class StandInServable:
    version = 1

    def __init__(self, gate):
        self._gate = gate
        self.running = 0
        self.signature_defs = None

    def input_specs(self, signature):
        return {"x": tf.TensorSpec([None], tf.string, name="x")}

    def check_batch_size(self, size):
        pass

    def predict(self, signature, arrays, output_filter=()):
        self.running += 1
        try:
            if not self._gate.wait(WAIT_SECONDS):
                raise TimeoutError("the gate stayed closed")
            return {"y": arrays["x"]}
        finally:
            self.running -= 1


class StandInServer:
    """What the APIs ask of a `ModelServer`, for one model `m`."""

    def __init__(self):
        self.gate = threading.Event()
        self.metrics = ServingMetrics()
        self.model = StandInServable(self.gate)

    def servable(self, name, version=None, label=None):
        return self.model

    def predict(self, name, version, label, signature, arrays, output_filter):
        return self.model, self.model.predict(signature, arrays)


@contextlib.contextmanager
def rest_app(app):
    """Serves `app` on 127.0.0.1 from a thread; yields the port."""
    from aiohttp import web

    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT_SECONDS)
        loop.run_until_complete(runner.cleanup())
        loop.close()


@contextlib.contextmanager
def grpc_app(server, max_request_bytes, budget=None, wait_seconds=5):
    """The gRPC server on 127.0.0.1; yields a `PredictionServiceStub`."""
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    grpc_server, port = grpc_api.make_server(
        server,
        "127.0.0.1",
        0,
        max_request_bytes,
        threads=8,
        budget=budget,
        wait_seconds=wait_seconds,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield prediction_service_pb2_grpc.PredictionServiceStub(channel)
    finally:
        grpc_server.stop(0).wait(WAIT_SECONDS)


def wait_until(predicate, what, timeout=WAIT_SECONDS):
    """Polls `predicate` until it holds (bounded)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.01)
