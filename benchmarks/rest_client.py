"""The serving benchmarks' REST client: one kept-alive connection per
client thread, as TF Serving's load tests use (standard library only)."""

import http.client
import json


class RestPredictions:
    """A kept-alive HTTP connection to a TF Serving REST API on this
    machine (`port`), for the serving benchmarks' clients: `predict(path,
    body)` is `(None, predictions)` or `(error, None)`; a connection that
    failed is opened again by the next request."""

    def __init__(self, port, timeout):
        self.port = port
        self.timeout = timeout
        self._connection = None

    def predict(self, path, body):
        try:
            if self._connection is None:
                self._connection = http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=self.timeout
                )
            self._connection.request(
                "POST", path, body, {"Content-Type": "application/json"}
            )
            response = self._connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.close()
            return f"connection: {type(error).__name__}", None
        if response.status != 200:
            return f"HTTP {response.status}: {data[:200]!r}", None
        return None, json.loads(data)["predictions"]

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None
