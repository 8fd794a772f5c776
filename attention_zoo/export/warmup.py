"""TF Serving's warm-up requests: `assets.extra/tf_serving_warmup_requests`.

When TF Serving loads a version it replays the requests of this file (a
TFRecord file of `tensorflow_serving.apis.prediction_log_pb2.PredictionLog`
records) before it reports the version AVAILABLE, so that the first real
requests do not pay for tracing and XLA compilation (which happen once per
new input shape). A request that fails, a record that does not parse or
more than `MAX_WARMUP_RECORDS` records make the version fail to load.

- `write_warmup_requests(version_dir, requests)` writes the file, one
  `PredictRequest` per `(signature_name, {input_name: array})`;
- `read_warmup_requests(version_dir)` reads them back (checked as TF
  Serving does), `[]` when the file is absent.

TensorFlow and `tensorflow_serving` are imported when a function is
called, not when this module is.
"""

import os

import numpy as np
from google.protobuf.message import DecodeError

# Where TF Serving looks for the file, relative to a version folder.
WARMUP_FILE = "assets.extra/tf_serving_warmup_requests"
# TF Serving's `WarmupConsts::kMaxNumRecords`: a version with more
# records fails to load.
MAX_WARMUP_RECORDS = 1000
# The signature a request without a signature name calls.
_DEFAULT_SIGNATURE = "serving_default"


def write_warmup_requests(version_dir, requests, model_name=""):
    """Writes `requests` as TF Serving's warm-up file of `version_dir`.

    Each request becomes a `PredictionLog` whose `predict_log.request` is
    a `PredictRequest` naming the signature (and `model_name`, which TF
    Serving does not check when warming up), its inputs as `TensorProto`s
    (`tf.make_tensor_proto`: a NumPy array of bytes or str gives
    tf.string). The file (`WARMUP_FILE`, its folder made if needed)
    replaces any earlier one only once complete.

    Args:
        version_dir: str, a version folder (`saved_models/<app>/<version>`).
        requests: a list of `(signature_name, inputs)`, `inputs` a dict
            input name -> NumPy array (or anything `np.asarray` takes) of
            the signature's dtype, with the batch dimension.
        model_name: str, the `model_spec.name` of each request. Defaults
            to `""`.

    Returns:
        The file's path.

    Raises:
        ValueError: more than `MAX_WARMUP_RECORDS` requests (TF Serving
            would refuse the version), or a request that is not a
            `(str, non-empty dict)` pair or whose input is not a tensor
            (naming the request and the input).
    """
    requests = check_warmup_requests(requests)
    # lazy: importing attention_zoo.export imports no TensorFlow (JAX);
    # TF Serving's protos import it too.
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2
    from tensorflow_serving.apis import prediction_log_pb2

    records = []
    for index, (signature_name, inputs) in enumerate(requests):
        proto = predict_pb2.PredictRequest()
        proto.model_spec.name = model_name
        proto.model_spec.signature_name = signature_name
        for name, value in inputs.items():
            try:
                tensor = tf.make_tensor_proto(np.asarray(value))
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"Warm-up request {index}: input {name!r} is not a "
                    f"tensor ({error})"
                ) from error
            proto.inputs[name].CopyFrom(tensor)
        log = prediction_log_pb2.PredictionLog(
            predict_log=prediction_log_pb2.PredictLog(request=proto)
        )
        records.append(log.SerializeToString())
    path = os.path.join(version_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.partial"
    try:
        with tf.io.TFRecordWriter(partial) as writer:
            for record in records:
                writer.write(record)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return path


def read_warmup_requests(version_dir):
    """The warm-up requests of `version_dir`, as `write_warmup_requests`
    takes them.

    Read as TF Serving reads them when it loads the version: every record
    must be a `PredictionLog` holding a predict request (the classify,
    regress and other logs TF Serving also replays are refused here: our
    exports write predict requests only), and there may be at most
    `MAX_WARMUP_RECORDS`.

    Args:
        version_dir: str, a version folder.

    Returns:
        A list of `(signature_name, inputs)`, `inputs` a dict input name ->
        NumPy array (`tf.make_ndarray`: tf.string gives an object array of
        bytes); a request without a signature name is `serving_default`'s,
        as in TF Serving. `[]` when there is no warm-up file.

    Raises:
        ValueError: naming the file and the record (0-based) that is not a
            TFRecord, does not parse or is not a predict log, or saying that
            the file holds more than `MAX_WARMUP_RECORDS` records.
    """
    path = os.path.join(version_dir, WARMUP_FILE)
    if not os.path.isfile(path):
        return []
    # lazy: as in `write_warmup_requests`
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    records = iter(tf.data.TFRecordDataset(path))
    while True:
        index = len(requests)
        try:
            record = next(records)
        except StopIteration:
            return requests
        except tf.errors.OpError as error:  # a truncated or corrupt file
            raise ValueError(
                f"{path}: record {index} is not a readable TFRecord "
                f"({error.message})"
            ) from error
        if index == MAX_WARMUP_RECORDS:
            raise ValueError(
                "Number of warmup records exceeds the maximum "
                f"({MAX_WARMUP_RECORDS}) at {path}"
            )
        try:
            log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        except DecodeError as error:
            raise ValueError(
                f"{path}: record {index} is not a PredictionLog ({error})"
            ) from error
        kind = log.WhichOneof("log_type")
        if kind != "predict_log":
            found = f"a {kind}" if kind else "an empty PredictionLog"
            raise ValueError(
                f"{path}: record {index} is {found}; warm-up requests here "
                "are predict logs only"
            )
        request = log.predict_log.request
        inputs = {
            name: tf.make_ndarray(tensor)
            for name, tensor in sorted(request.inputs.items())
        }
        signature = request.model_spec.signature_name or _DEFAULT_SIGNATURE
        requests.append((signature, inputs))


def check_warmup_requests(requests, signatures=None):
    """`requests` as a list, once checked as `write_warmup_requests` and
    TF Serving take them.

    Args:
        requests: a list of `(signature_name, inputs)` pairs, `inputs` a
            non-empty dict input name -> array.
        signatures: optional dict signature name -> `tf.function` (with an
            `input_signature`, as `save_export` saves them): each request
            must then name one of them and give exactly its inputs, with
            their ranks (TF Serving would fail to load the version on a
            request its signature refuses).

    Raises:
        ValueError: more than `MAX_WARMUP_RECORDS` requests, or a request
            that is not such a pair or that its signature would not take,
            naming the request (0-based).
    """
    requests = list(requests)
    if len(requests) > MAX_WARMUP_RECORDS:
        raise ValueError(
            f"TF Serving replays at most {MAX_WARMUP_RECORDS} warm-up "
            f"requests. Received: {len(requests)} requests"
        )
    for index, request in enumerate(requests):
        if (
            not isinstance(request, (tuple, list))
            or len(request) != 2
            or not isinstance(request[0], str)
            or not isinstance(request[1], dict)
            or not request[1]
        ):
            raise ValueError(
                "Each warm-up request must be a `(signature_name, inputs)` "
                "pair, `inputs` a non-empty dict of arrays. Received at "
                f"index {index}: {request!r:.200}"
            )
        if signatures is not None:
            _check_signature(index, *request, signatures)
    return requests


def _check_signature(index, name, inputs, signatures):
    """A `ValueError` unless signature `name` takes `inputs` (names and
    ranks; a signature without an `input_signature` is not checked)."""
    if name not in signatures:
        raise ValueError(
            f"Warm-up request {index} names the signature {name!r}; the "
            f"export has {sorted(signatures)}"
        )
    specs = getattr(signatures[name], "input_signature", None)
    if specs is None:
        return
    ranks = {spec.name: spec.shape.rank for spec in specs}
    if set(inputs) != set(ranks):
        raise ValueError(
            f"Warm-up request {index} gives the inputs {sorted(inputs)}; "
            f"signature {name!r} takes {sorted(ranks)}"
        )
    for key, rank in ranks.items():
        if rank is not None and np.ndim(inputs[key]) != rank:
            raise ValueError(
                f"Warm-up request {index}: input {key!r} of signature "
                f"{name!r} must have rank {rank}. Received: shape "
                f"{np.shape(inputs[key])}"
            )
