"""`Servable`: one loaded version of a model, and its `predict`.

A servable is a SavedModel version folder loaded with
`tf.saved_model.load` (TensorFlow Text's ops registered first, for exports
that tokenize in their graph). It checks a request's inputs against the
signature as TF Serving does (names, dtypes, shapes, one batch size, not
empty, not over the request limit), runs the signature directly or
through a `Batcher`, and answers the signature defs for the metadata APIs.
"""

import os
import threading

import numpy as np

from attention_zoo.serving.batching import Batcher
from attention_zoo.serving.batching import batch_size
from attention_zoo.serving.status import ServingError
from attention_zoo.serving.status import from_tensorflow


class Servable:
    """A version folder, loaded and ready to answer `predict`.

    Args:
        name: str, the model's name (in messages and metrics).
        version: int, the version number.
        path: str, the version folder (a SavedModel).
        batching: optional `BatchingParameters`: merge concurrent
            requests of one signature (see `Batcher`); `None` runs each
            request alone.
        max_request_examples: int, the most examples one request may
            carry (with batching, `batching.max_batch_size` is the
            limit).
        on_batch: optional callable `(signature_name, size)`, told of
            every batch run (the metrics).

    Raises:
        Whatever `tf.saved_model.load` raises for a folder that does not
        load (the caller reports it and keeps the previous version).
    """

    def __init__(
        self,
        name,
        version,
        path,
        batching=None,
        max_request_examples=1024,
        on_batch=None,
    ):
        # lazy: `attention-zoo serve --help` imports no TensorFlow (JAX)
        # and no TensorFlow Text
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops)

        self.name = name
        self.version = version
        self.path = path
        self._model = tf.saved_model.load(path)
        self.functions = dict(self._model.signatures)
        self.signature_defs = _read_signature_defs(path)
        self._batching = batching
        self._max_examples = (
            batching.max_batch_size if batching else max_request_examples
        )
        self._limit_name = (
            "max_batch_size of the batching parameters"
            if batching
            else "--max_request_examples"
        )
        self._on_batch = on_batch
        self._batchers = {}
        self._lock = threading.Lock()

    def input_specs(self, signature_name):
        """Input name -> `tf.TensorSpec` of a signature."""
        return self.function(signature_name).structured_input_signature[1]

    def function(self, signature_name):
        """The concrete function of a signature.

        Raises:
            ServingError: INVALID_ARGUMENT, no signature of that name (TF
                Serving's message).
        """
        if signature_name not in self.functions:
            raise ServingError(
                "INVALID_ARGUMENT",
                f'Serving signature name: "{signature_name}" not found in '
                "signature def",
            )
        return self.functions[signature_name]

    def check_batch_size(self, size):
        """Refuses a request of `size` examples over the limit, before
        its inputs are read (a REST body of a million strings).

        Raises:
            ServingError: INVALID_ARGUMENT, naming the limit.
        """
        if size > self._max_examples:
            raise _too_many(size, self._max_examples, self._limit_name)

    def predict(self, signature_name, arrays, output_filter=()):
        """Runs a signature on one request's inputs.

        Args:
            signature_name: str.
            arrays: dict, input name -> NumPy array (object arrays of
                bytes for strings), every input of the signature.
            output_filter: optional names of the outputs to answer (all
                when empty).

        Returns:
            dict, output name -> NumPy array.

        Raises:
            ServingError: the request does not fit the signature, is over
                the limits, or the model failed on it.
        """
        specs = self.input_specs(signature_name)
        arrays = check_inputs(
            specs, arrays, self._max_examples, self._limit_name
        )
        outputs = self.function(signature_name).structured_outputs
        unknown = sorted(set(output_filter) - set(outputs))
        if unknown:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"output tensor alias not found in signature: {unknown[0]} "
                f"Outputs expected to be in the set {{{','.join(outputs)}}}.",
            )
        if self._batching is None:
            result = self._run(signature_name, arrays)
        else:
            result = self._batcher(signature_name).run(arrays)
        if output_filter:
            result = {name: result[name] for name in output_filter}
        return result

    def _run(self, signature_name, arrays):
        """Calls the signature on whole arrays (no checks)."""
        import tensorflow as tf  # lazy: as in `__init__`

        specs = self.input_specs(signature_name)
        try:
            outputs = self.functions[signature_name](
                **{
                    name: tf.constant(array, specs[name].dtype)
                    for name, array in arrays.items()
                }
            )
        except tf.errors.OpError as error:
            raise from_tensorflow(error) from None
        except (TypeError, ValueError) as error:  # refused by the function
            raise ServingError("INVALID_ARGUMENT", str(error)) from None
        if self._batching is None and self._on_batch is not None:
            self._on_batch(signature_name, batch_size(arrays))
        return {name: value.numpy() for name, value in outputs.items()}

    def _batcher(self, signature_name):
        with self._lock:
            if signature_name not in self._batchers:
                self._batchers[signature_name] = Batcher(
                    lambda arrays: self._run(signature_name, arrays),
                    self._batching,
                    on_batch=self._batch_callback(signature_name),
                    name=f"{self.name}/{self.version}/{signature_name}",
                )
            return self._batchers[signature_name]

    def _batch_callback(self, signature_name):
        if self._on_batch is None:
            return None
        return lambda size: self._on_batch(signature_name, size)

    def close(self):
        """Runs what the batchers hold, then stops them (on unload)."""
        with self._lock:
            batchers, self._batchers = list(self._batchers.values()), {}
        for batcher in batchers:
            batcher.stop()


def check_inputs(specs, arrays, max_examples, limit_name="the limit"):
    """`arrays` as the signature takes them, or a `ServingError`.

    Checks, with TF Serving's wording where it has one: the input names
    are the signature's, each dtype is the signature's (numbers of
    another kind are refused, not cast), each shape fits, all inputs
    share one batch size, which is neither 0 nor over `max_examples`.
    """
    import tensorflow as tf  # lazy: as in `Servable.__init__`

    sent, expected = set(arrays), set(specs)
    if sent != expected:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"input size does not match signature: {len(sent)}!="
            f"{len(expected)} len({{{','.join(sorted(sent))}}}) != "
            f"len({{{','.join(sorted(expected))}}}). Sent extra: "
            f"{{{','.join(sorted(sent - expected))}}}. Missing but "
            f"required: {{{','.join(sorted(expected - sent))}}}.",
        )
    checked = {}
    for name, array in sorted(arrays.items()):
        spec = specs[name]
        array = np.asarray(array)
        checked[name] = _as_dtype(name, array, spec.dtype, tf)
        if not spec.shape.is_compatible_with(array.shape):
            raise ServingError(
                "INVALID_ARGUMENT",
                f"input {name} has shape {list(array.shape)}, but the "
                f"signature takes {spec.shape}",
            )
    sizes = {name: array.shape[0] for name, array in checked.items()}
    if len(set(sizes.values())) > 1:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"inputs have different batch sizes: {sizes}",
        )
    size = batch_size(checked)
    if size == 0:
        raise ServingError(
            "INVALID_ARGUMENT", "empty batch: the inputs hold no example"
        )
    if size > max_examples:
        raise _too_many(size, max_examples, limit_name)
    return checked


def _too_many(size, max_examples, limit_name):
    return ServingError(
        "INVALID_ARGUMENT",
        f"batch of {size} examples is over the limit of {max_examples} "
        f"examples per request ({limit_name})",
    )


def _as_dtype(name, array, dtype, tf):
    """`array` as `dtype`: strings stay bytes objects, numbers must be of
    the same kind (an int for an int input, a float for a float one)."""
    if dtype == tf.string:
        if array.dtype.kind in "OSU":
            return array
    elif array.dtype.kind in "iu" and dtype.is_integer:
        limits = np.iinfo(dtype.as_numpy_dtype)
        if not array.size or (
            limits.min <= array.min() and array.max() <= limits.max
        ):
            return array.astype(dtype.as_numpy_dtype)
    elif array.dtype.kind in "iuf" and dtype.is_floating:
        return array.astype(dtype.as_numpy_dtype)
    elif array.dtype.kind == "b" and dtype == tf.bool:
        return array
    found = tf.as_dtype(array.dtype).name if array.dtype.kind != "O" else "?"
    raise ServingError(
        "INVALID_ARGUMENT",
        f"Expects arg {name} to be {dtype.name} but {found} is provided",
    )


def _read_signature_defs(path):
    """The version's `SignatureDefMap` (TF Serving's metadata), read from
    `saved_model.pb`."""
    # lazy: as in `Servable.__init__` (TF Serving's protos import TF)
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow_serving.apis import get_model_metadata_pb2

    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        saved_model.ParseFromString(file.read())
    signature_defs = get_model_metadata_pb2.SignatureDefMap()
    for key, signature in saved_model.meta_graphs[0].signature_def.items():
        signature_defs.signature_def[key].CopyFrom(signature)
    return signature_defs
