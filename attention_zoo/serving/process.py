"""`ServerProcess`: the server in a subprocess on loopback ports.

For tests and load benchmarks of a server (ours, as a client of TF
Serving's APIs would see it): `ServerProcess(args)` starts `python -m
attention_zoo.serving ARGS --port P --rest_api_port Q` on two free
127.0.0.1 ports and waits for TF Serving's two start-up lines; `rest(...)`
and the stubs talk to it with plain HTTP (`urllib`) and the official
`tensorflow-serving-api` stubs. Every wait is bounded; `stop()` (or the
context manager) ends it, `kill()` sends SIGKILL.

```python
with ServerProcess(["--model_base_path=/models/m", "--model_name=m"]) as s:
    status, answer = s.rest("/v1/models/m:predict", {"instances": [...]})
```
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import grpc
from tensorflow_serving.apis import model_service_pb2_grpc
from tensorflow_serving.apis import prediction_service_pb2_grpc

# The folder holding the `attention_zoo` package, for the subprocess.
PACKAGE_ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
START_TIMEOUT = 180  # seconds: TensorFlow's import and the first loads


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerProcess:
    """A server subprocess (see the module docstring).

    Args:
        args: list of str, `attention-zoo serve`'s flags (the model).
        rest: bool, whether to open the REST port too.
        grpc_port, rest_port: optional ints, the ports (free ones by
            default): a restart takes those of the server it replaces.
        command: optional list of str, what runs the server (by default
            `python -m attention_zoo.serving`; `[sys.executable, "-m",
            "attention_zoo_apps.cli", "serve"]` takes shipped models' names).
    """

    def __init__(
        self, args, rest=True, grpc_port=None, rest_port=None, command=None
    ):
        self.grpc_port = grpc_port or free_port()
        self.rest_port = (rest_port or free_port()) if rest else 0
        self.log = tempfile.NamedTemporaryFile(
            "w+", suffix=".log", prefix="serve-", delete=False
        )
        path = os.environ.get("PYTHONPATH")
        env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            PYTHONPATH=PACKAGE_ROOT + (os.pathsep + path if path else ""),
        )
        self.process = subprocess.Popen(
            [
                *(command or [sys.executable, "-m", "attention_zoo.serving"]),
                *args,
                f"--port={self.grpc_port}",
                f"--rest_api_port={self.rest_port}",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._wait_started()

    def _wait_started(self):
        wanted = ["Running gRPC ModelServer at"]
        if self.rest_port:
            wanted.append("Exporting HTTP/REST API at:")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            text = self.output()
            if all(line in text for line in wanted):
                return
            if self.process.poll() is not None:
                self.stop()  # closes and removes the log
                raise RuntimeError(
                    f"The server exited ({self.process.returncode}):\n{text}"
                )
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"The server did not start:\n{self.output()}")

    def output(self):
        with open(self.log.name) as file:
            return file.read()

    def url(self, path):
        return f"http://127.0.0.1:{self.rest_port}{path}"

    def rest(self, path, body=None, raw=None, method=None, timeout=60):
        """`(status, JSON answer)` of a REST request; `body` is sent as
        JSON, `raw` as bytes."""
        data = (
            raw
            if raw is not None
            else (None if body is None else json.dumps(body).encode("utf-8"))
        )
        request = urllib.request.Request(
            self.url(path), data=data, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def text(self, path, timeout=30):
        with urllib.request.urlopen(self.url(path), timeout=timeout) as page:
            return page.read().decode("utf-8")

    def channel(self):
        # Reconnects within a second of a restart (gRPC's default backoff
        # grows to minutes while a server is down).
        return grpc.insecure_channel(
            f"127.0.0.1:{self.grpc_port}",
            options=[("grpc.max_reconnect_backoff_ms", 1000)],
        )

    def prediction_stub(self, channel):
        return prediction_service_pb2_grpc.PredictionServiceStub(channel)

    def model_stub(self, channel):
        return model_service_pb2_grpc.ModelServiceStub(channel)

    def wait_for(self, predicate, timeout=60, what="a condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        raise TimeoutError(f"Timed out waiting for {what}:\n{self.output()}")

    def kill(self):
        """SIGKILL, no goodbye."""
        self.process.kill()
        self.process.wait(30)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()
        os.unlink(self.log.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
