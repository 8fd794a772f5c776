"""TF Serving's REST API on an aiohttp application.

aiohttp is the HTTP server: an established, maintained asynchronous
server (HTTP/1.1 keep-alive, request size limits, graceful shutdown), so
that none of the protocol is written here. The routes are TF Serving's:

    GET  /v1/models/NAME[/versions/N | /labels/L]            status
    GET  /v1/models/NAME[/versions/N | /labels/L]/metadata   signature defs
    POST /v1/models/NAME[/versions/N | /labels/L]:predict    predict

and, when the monitoring config enables it, the Prometheus page (TF
Serving's `/monitoring/prometheus/metrics`). Bodies are read and written
by `attention_zoo.export.rest` (TF Serving's JSON layouts); the model runs
on a thread pool, so the event loop keeps answering. Every error is
`{"error": "..."}` with the HTTP status TF Serving gives its code: a
body that is not JSON, not UTF-8 or nests over `MAX_JSON_DEPTH` levels
is a 400, one over `--max_request_bytes` a 413. A predict body waits
for room in the `RequestBudget` (by its `Content-Length`, before it is
read) and is refused 429 when there is none.
"""

import asyncio
import concurrent.futures
import json
import logging
import re
import time

from aiohttp import web
from google.protobuf import json_format

from attention_zoo.export import rest
from attention_zoo.serving.admission import RequestBudget
from attention_zoo.serving.model_server import DEFAULT_SIGNATURE
from attention_zoo.serving.status import ServingError

logger = logging.getLogger("attention_zoo.serving")
_PATH = re.compile(
    r"^/v1/models/(?P<name>[^/:]+)"
    r"(?:/versions/(?P<version>-?\d+)|/labels/(?P<label>[^/:]+))?"
    r"(?P<action>/metadata|:[a-zA-Z]+)?$"
)
# The deepest nesting of arrays and objects a body may have: an input of
# `rest.MAX_RANK` dimensions nests at most 3 levels more.
MAX_JSON_DEPTH = 64


def make_app(
    server,
    timeout_ms=30000,
    max_request_bytes=32 << 20,
    metrics_path=None,
    threads=32,
    budget=None,
):
    """The aiohttp application answering TF Serving's REST API.

    Args:
        server: the `ModelServer`.
        timeout_ms: int, a request still running after this long is
            answered `DEADLINE_EXCEEDED` (`--rest_api_timeout_in_ms`).
        max_request_bytes: int, bodies over this are refused (413).
        metrics_path: optional str, where the Prometheus page is served.
        threads: int, the threads that parse, run and write requests.
        budget: optional `RequestBudget`, shared with the gRPC API; by
            default one of twice `max_request_bytes`.
    """
    app = web.Application(client_max_size=max_request_bytes)
    handler = _Handler(
        server,
        timeout_ms / 1000,
        max_request_bytes,
        threads,
        budget or RequestBudget(2 * max_request_bytes),
    )
    if metrics_path:
        app.router.add_get(metrics_path, handler.metrics)
    app.router.add_route("*", "/{tail:.*}", handler.handle)
    app.on_cleanup.append(handler.close)
    return app


class _Handler:
    def __init__(self, server, timeout, max_request_bytes, threads, budget):
        self._server = server
        self._timeout = timeout
        self._max_bytes = max_request_bytes
        self._budget = budget
        self._pool = concurrent.futures.ThreadPoolExecutor(
            threads, thread_name_prefix="rest"
        )

    async def close(self, app):
        self._pool.shutdown(wait=False)

    async def metrics(self, request):
        return web.Response(
            body=self._server.metrics.page(),
            headers={"Content-Type": self._server.metrics.CONTENT_TYPE},
        )

    async def handle(self, request):
        start = time.monotonic()
        name, signature, api = "", "", "unknown"
        try:
            match = _PATH.match(request.path)
            if match is None:
                raise _malformed(request)
            name = match["name"]
            version = _version(match["version"])
            label = match["label"]
            action = match["action"]
            if request.method == "GET" and action in (None, "/metadata"):
                api = "GetModelMetadata" if action else "GetModelStatus"
                if label is not None and not action:
                    raise ServingError(
                        "INVALID_ARGUMENT",
                        "Model version labels are not supported in status "
                        "requests",
                    )
                body = await self._call(
                    self._metadata if action else self._status,
                    name,
                    version,
                    label,
                )
            elif request.method == "POST" and action == ":predict":
                api = "Predict"
                signature, body = await self._predict_request(
                    request, start, name, version, label
                )
            elif request.method == "POST" and action in (
                ":classify",
                ":regress",
            ):
                raise ServingError(
                    "UNIMPLEMENTED",
                    f"{action[1:]} is not served here (the exports answer "
                    "predict)",
                )
            else:
                raise _malformed(request)
            status = 200
            code = "OK"
        except ServingError as error:
            body, status = {"error": error.message}, error.http_status
            code = error.code
        except Exception as error:  # a bug: answered, logged, still up
            logger.exception("REST request %s failed", request.path)
            body, status = {"error": f"Internal: {error}"}, 500
            code = "INTERNAL"
        self._server.metrics.record_request(
            name,
            signature or DEFAULT_SIGNATURE,
            api,
            "REST",
            code,
            time.monotonic() - start,
        )
        return web.Response(
            text=json.dumps(body, indent=None),
            status=status,
            content_type="application/json",
        )

    async def _predict_request(self, request, start, name, version, label):
        """Admits, reads and runs a predict body (see the module doc)."""
        length = request.content_length
        if length is not None and length > self._max_bytes:
            raise _too_large(length, self._max_bytes)
        ticket = None
        try:
            if length is not None:  # admitted before the body is read
                ticket = await self._admit(length, start)
            raw = await self._read(request)
            if ticket is None:  # chunked: admitted once read
                ticket = await self._admit(len(raw), start)
        except BaseException:
            if ticket is not None:
                ticket.release()
            raise
        return await self._call(
            self._predict,
            name,
            version,
            label,
            raw,
            ticket=ticket,
            timeout=self._time_left(start),
        )

    async def _admit(self, size, start):
        ticket = self._budget.admit(size)
        await ticket.wait_async(self._time_left(start))
        return ticket

    def _time_left(self, start):
        return max(self._timeout - (time.monotonic() - start), 0.001)

    async def _read(self, request):
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise _too_large(None, self._max_bytes) from None

    async def _call(self, function, *args, ticket=None, timeout=None):
        """Runs `function(*args)` on the pool within `timeout` seconds
        (by default the whole timeout); the `ticket`, if any, is released
        when the function has returned, not when the answer gives up."""
        try:
            future = self._pool.submit(function, *args)
        except BaseException:
            if ticket is not None:
                ticket.release()
            raise
        if ticket is not None:
            future.add_done_callback(lambda _: ticket.release())
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(future), timeout or self._timeout
            )
        except asyncio.TimeoutError:
            raise ServingError(
                "DEADLINE_EXCEEDED",
                f"Deadline exceeded: the request took over "
                f"{self._timeout * 1000:g} ms (--rest_api_timeout_in_ms)",
            ) from None

    def _status(self, name, version, label):
        return json_format.MessageToDict(
            self._server.status(name, version),
            preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True,
        )

    def _metadata(self, name, version, label):
        response = self._server.metadata(name, version, label)
        servable = self._server.servable(name, version, label)
        return {
            "model_spec": json_format.MessageToDict(
                response.model_spec,
                preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
            ),
            "metadata": {
                "signature_def": json_format.MessageToDict(
                    servable.signature_defs,
                    preserving_proto_field_name=True,
                )
            },
        }

    def _predict(self, name, version, label, raw):
        """`(signature, answer)`: parses, runs and writes one request."""
        body = _parse_json(raw)
        try:
            signature = rest.signature_key(body)
            servable = self._server.servable(name, version, label)
            specs = servable.input_specs(signature)
            row_format, arrays = rest.read_predict_body(
                body, specs, servable.check_batch_size
            )
        except rest.RequestError as error:
            raise ServingError("INVALID_ARGUMENT", str(error)) from None
        outputs = servable.predict(signature, arrays)
        try:
            return signature, rest.write_predict_body(outputs, row_format)
        except rest.RequestError as error:
            raise ServingError("INVALID_ARGUMENT", str(error)) from None


def _parse_json(raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"JSON Parse error: the body is not valid UTF-8 (byte "
            f"{error.start})",
        ) from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as error:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"JSON Parse error: {error.msg} at offset: {error.pos}",
        ) from None
    except RecursionError:
        raise _too_deep() from None
    except ValueError as error:  # an integer of over 4300 digits
        reason = str(error).split(";")[0]
        raise ServingError(
            "INVALID_ARGUMENT", f"JSON Parse error: {reason}"
        ) from None
    if _nests_deeper(body, MAX_JSON_DEPTH):
        raise _too_deep()
    return body


def _nests_deeper(value, limit):
    """Whether `value` nests lists and dicts over `limit` levels (read
    level by level: no recursion)."""
    level = [value] if isinstance(value, (list, dict)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            child
            for container in level
            for child in (
                container.values() if isinstance(container, dict) else container
            )
            if isinstance(child, (list, dict))
        ]
    return False


def _too_deep():
    return ServingError(
        "INVALID_ARGUMENT",
        f"JSON Parse error: the body nests arrays and objects over "
        f"{MAX_JSON_DEPTH} levels deep",
    )


def _version(text):
    if text is None:
        return None
    version = int(text)
    if version < 0:
        raise ServingError("INVALID_ARGUMENT", f"Invalid model version: {text}")
    return version


def _malformed(request):
    return ServingError(
        "INVALID_ARGUMENT",
        f"Malformed request: {request.method} {request.path_qs}",
    )


def _too_large(length, limit):
    size = f"of {length} bytes " if length is not None else ""
    return ServingError(
        "INVALID_ARGUMENT",
        f"Request body {size}is over the limit of {limit} bytes "
        "(--max_request_bytes)",
        http_status=413,
    )
