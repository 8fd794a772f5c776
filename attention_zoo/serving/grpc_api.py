"""TF Serving's gRPC API with grpcio and the official protos.

`PredictionService` (`Predict`, `GetModelMetadata`) and `ModelService`
(`GetModelStatus`) subclass the servicers generated in the
`tensorflow-serving-api` package (`tensorflow_serving.apis.*_pb2_grpc`),
so the wire format is TF Serving's own and a client written with its
`PredictionServiceStub` works unchanged. grpcio is gRPC's reference
implementation for Python (HTTP/2, flow control, deadlines, message size
limits); nothing of the protocol is written here. The methods this server
does not answer (`Classify`, `Regress`, `MultiInference`,
`HandleReloadConfigRequest`) keep the generated `UNIMPLEMENTED` answer.

Memory: a message over `--max_request_bytes` is refused by grpcio
(`RESOURCE_EXHAUSTED`); a `Predict` waits for room in the
`RequestBudget` (by its size) and is refused `RESOURCE_EXHAUSTED` when
there is none; a `TensorProto` whose few values stand for a larger
tensor (TF pads a short list with its last value) is refused when that
tensor would pass `--max_request_bytes`.
"""

import concurrent.futures
import logging
import time

import grpc
import tensorflow as tf
from tensorflow_serving.apis import model_service_pb2_grpc
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_service_pb2_grpc

from attention_zoo.serving.admission import RequestBudget
from attention_zoo.serving.model_server import DEFAULT_SIGNATURE
from attention_zoo.serving.status import ServingError

logger = logging.getLogger("attention_zoo.serving")


def make_server(
    model_server,
    host,
    port,
    max_request_bytes,
    threads=64,
    budget=None,
    wait_seconds=30,
):
    """A started `grpc.Server` answering both services on `host:port`.

    Args:
        model_server: the `ModelServer`.
        host, port: where to listen.
        max_request_bytes: int, larger messages are refused.
        threads: int, the threads that answer calls.
        budget: optional `RequestBudget`, shared with the REST API; by
            default one of twice `max_request_bytes`.
        wait_seconds: float, how long a `Predict` without a deadline
            waits for room in the budget (one with a deadline waits up
            to it).

    Returns:
        `(server, port)`: the port is the one bound (`port` 0 picks one).
    """
    server = grpc.server(
        concurrent.futures.ThreadPoolExecutor(
            threads, thread_name_prefix="grpc"
        ),
        options=[
            ("grpc.max_receive_message_length", max_request_bytes),
            ("grpc.max_send_message_length", -1),
        ],
    )
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
        PredictionService(
            model_server,
            budget or RequestBudget(2 * max_request_bytes),
            wait_seconds,
            max_request_bytes,
        ),
        server,
    )
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(
        ModelService(model_server), server
    )
    bound = server.add_insecure_port(f"{host}:{port}")
    if not bound:
        raise OSError(f"Could not bind the gRPC port {host}:{port}")
    server.start()
    return server, bound


def _spec(model_spec):
    """`(name, version or None, label or None)` of a request's ModelSpec."""
    version = (
        model_spec.version.value if model_spec.HasField("version") else None
    )
    return model_spec.name, version, model_spec.version_label or None


class _Service:
    def __init__(self, model_server):
        self._server = model_server

    def _answer(self, context, api, model_spec, work):
        """Runs `work()`; a `ServingError` aborts with its code."""
        start = time.monotonic()
        signature = model_spec.signature_name or DEFAULT_SIGNATURE
        code = "OK"
        try:
            return work()
        except ServingError as error:
            code, message = error.code, error.message
        except Exception as error:  # a bug: answered, logged, still up
            logger.exception("gRPC %s failed", api)
            code, message = "INTERNAL", f"Internal: {error}"
        finally:
            self._server.metrics.record_request(
                model_spec.name,
                signature,
                api,
                "GRPC",
                code,
                time.monotonic() - start,
            )
        context.abort(getattr(grpc.StatusCode, code), message)


class PredictionService(
    _Service, prediction_service_pb2_grpc.PredictionServiceServicer
):
    """`Predict` and `GetModelMetadata`, as TF Serving answers them."""

    def __init__(self, model_server, budget, wait_seconds, max_request_bytes):
        super().__init__(model_server)
        self._budget = budget
        self._wait_seconds = wait_seconds
        self._max_bytes = max_request_bytes

    def Predict(self, request, context):  # noqa: N802 (gRPC's name)
        return self._answer(
            context,
            "Predict",
            request.model_spec,
            lambda: self._admitted(request, context),
        )

    def _admitted(self, request, context):
        """`_predict` once the budget has room for the request."""
        ticket = self._budget.admit(request.ByteSize())
        try:
            remaining = context.time_remaining()  # the call's deadline
            ticket.wait(self._wait_seconds if remaining is None else remaining)
            return self._predict(request)
        finally:
            ticket.release()

    def _predict(self, request):
        name, version, label = _spec(request.model_spec)
        signature = request.model_spec.signature_name or DEFAULT_SIGNATURE
        arrays = {}
        for key, proto in request.inputs.items():
            _check_expanded_size(key, proto, self._max_bytes)
            try:
                arrays[key] = tf.make_ndarray(proto)
            except Exception as error:
                raise ServingError(
                    "INVALID_ARGUMENT",
                    f"Input {key} is not a valid TensorProto: {error}",
                ) from None
        servable, outputs = self._server.predict(
            name,
            version,
            label,
            signature,
            arrays,
            tuple(request.output_filter),
        )
        response = predict_pb2.PredictResponse()
        response.model_spec.name = name
        response.model_spec.version.value = servable.version
        response.model_spec.signature_name = signature
        for key, array in outputs.items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(array))
        return response

    def GetModelMetadata(self, request, context):  # noqa: N802
        return self._answer(
            context,
            "GetModelMetadata",
            request.model_spec,
            lambda: self._metadata(request),
        )

    def _metadata(self, request):
        fields = list(request.metadata_field)
        if not fields:
            raise ServingError(
                "INVALID_ARGUMENT",
                "GetModelMetadataRequest must specify at least one "
                "metadata_field",
            )
        for field in fields:
            if field != "signature_def":
                raise ServingError(
                    "INVALID_ARGUMENT",
                    f"Metadata field {field} is not supported",
                )
        return self._server.metadata(*_spec(request.model_spec))


def _check_expanded_size(key, proto, limit):
    """Refuses a `TensorProto` whose values, padded to its shape as
    `tf.make_ndarray` pads them, would take over `limit` bytes."""
    if proto.tensor_content:  # the values themselves, already received
        return
    elements = 1
    for dim in proto.tensor_shape.dim:
        elements *= max(dim.size, 0)
    try:
        dtype = tf.as_dtype(proto.dtype)
    except TypeError:  # make_ndarray reports it
        return
    if dtype == tf.string:
        values = proto.string_val
        missing = elements - len(values)
        last = len(values[-1]) if values else 0
        size = missing * max(last, 1) if missing > 0 else 0
    else:
        size = elements * max(dtype.size, 1)
    if size > limit:
        shape = [dim.size for dim in proto.tensor_shape.dim]
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Input {key} of shape {shape} would take {size} bytes as a "
            "tensor (a short list of values is repeated to fill its shape), "
            f"over the limit of {limit} bytes (--max_request_bytes)",
        )


class ModelService(_Service, model_service_pb2_grpc.ModelServiceServicer):
    """`GetModelStatus`, as TF Serving answers it."""

    def GetModelStatus(self, request, context):  # noqa: N802
        def work():
            name, version, label = _spec(request.model_spec)
            if label is not None:
                raise ServingError(
                    "INVALID_ARGUMENT",
                    "Model version labels are not supported in status requests",
                )
            return self._server.status(name, version)

        return self._answer(context, "GetModelStatus", request.model_spec, work)
