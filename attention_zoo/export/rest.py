"""TF Serving's REST `predict` bodies, in process.

`predict_request(signature, body)` takes the JSON body of a request to TF
Serving's `POST /v1/models/NAME:predict` (as a dict) and returns the body TF
Serving answers with, by calling the signature here. It follows TF
Serving's own reader and writer (`tensorflow_serving/util/json_tensor.cc`)
and its REST API guide:

- row format, `{"instances": [...]}`: one item per example, the batch
  dimension left out. An item is an object of named inputs, or a bare
  value when the signature has one input. All items must have one shape.
  The answer is `{"predictions": [...]}`, one item per example: an object
  of named outputs, or the bare value when there is one output; all
  outputs must share their first dimension.
- columnar format, `{"inputs": {...}}`: each named input whole (or a bare
  value when there is one input). The answer is `{"outputs": {...}}` (the
  bare value when there is one output).
- strings are JSON strings; bytes may be sent as `{"b64": "..."}` and are
  answered so for outputs whose name ends in `_bytes`. Floats are written
  as TF Serving writes them (six significant digits when that reads back
  exactly, else nine for float32); NaN and infinities as `NaN`,
  `Infinity`, `-Infinity` (Python's `json` reads and writes those).
- any error gives `{"error": "message"}`.

Example:

```python
serving = tf.saved_model.load("saved_models/<app>/1")
predict_request(serving, {"instances": [{"text": "a sentence"}]})
# {"predictions": [{"label": "...", "scores": [...]}]}
```
"""

import base64
import binascii
import json
import math

import numpy as np
import tensorflow as tf

BYTES_SUFFIX = "_bytes"
DEFAULT_SIGNATURE = "serving_default"
# The most dimensions of an input (NumPy 1's limit; 2's is 64).
MAX_RANK = 32
# The longest JSON value quoted in an error message.
_QUOTED_CHARACTERS = 1000
# Digits that make a float read back exactly (`max_digits10`).
_MAX_DIGITS = {np.dtype("float32"): 9, np.dtype("float64"): 17}


class RequestError(Exception):
    """A request TF Serving would refuse (`INVALID_ARGUMENT`); the message
    is its answer."""


def predict_request(signature, body):
    """Answers a TF Serving REST `predict` body with `signature`.

    Args:
        signature: a loaded SavedModel (`tf.saved_model.load(path)`, whose
            signature the body's optional `signature_name` picks, by
            default `serving_default`) or one of its signatures (a
            concrete function).
        body: dict, the request's JSON object.

    Returns:
        A dict, the JSON object TF Serving answers with:
        `{"predictions": [...]}`, `{"outputs": ...}` or `{"error": "..."}`.
    """
    try:
        if not isinstance(body, dict):
            raise RequestError(f"JSON Value: {_text(body)} Is not object")
        function = _function(signature, body)
        specs = function.structured_input_signature[1]
        row_format, arrays = read_predict_body(body, specs)
        outputs = {
            name: np.asarray(value)
            for name, value in function(**_tensors(arrays, specs)).items()
        }
        return write_predict_body(outputs, row_format)
    except RequestError as error:
        return {"error": str(error)}
    except tf.errors.OpError as error:
        return {"error": error.message}
    except (TypeError, ValueError) as error:  # refused by the function
        return {"error": str(error)}


def signature_key(body):
    """The signature a `predict` body names (`signature_name`, by default
    `serving_default`)."""
    if not isinstance(body, dict):
        raise RequestError(f"JSON Value: {_text(body)} Is not object")
    name = body.get("signature_name", DEFAULT_SIGNATURE)
    if not isinstance(name, str):
        raise RequestError(
            f"JSON Value: {_text(body)} not formatted correctly. "
            "'signature_name' key must be a string value."
        )
    return name


def read_predict_body(body, specs, check_batch_size=None):
    """The inputs of a `predict` body, as NumPy arrays.

    Args:
        body: dict, the request's JSON object.
        specs: dict, input name -> `tf.TensorSpec` of the signature.
        check_batch_size: optional callable, given the batch size before
            the values are read (a server refuses a request over its
            limit there, before the work of reading it); raises to
            refuse.

    Returns:
        `(row_format, arrays)`: whether the body used the row format
        (`instances`, answered by `predictions`) and input name -> array
        (object arrays of bytes for strings; shapes checked against
        `specs`).

    Raises:
        RequestError: the body is not one TF Serving accepts.
    """
    if "instances" in body and "inputs" in body:
        raise RequestError(
            f"JSON Value: {_text(body)} Not formatted correctly "
            "expecting only one of 'inputs' or 'instances' keys to exist"
        )
    check = check_batch_size or (lambda size: None)
    if "instances" in body:
        row_format, arrays = True, _read_instances(body, specs, check)
    elif "inputs" in body:
        row_format, arrays = False, _read_inputs(body["inputs"], specs, check)
    else:
        raise RequestError("Missing 'inputs' or 'instances' key")
    for name, array in arrays.items():
        if not specs[name].shape.is_compatible_with(array.shape):
            raise RequestError(
                f"Input {name} has shape {_shape(array.shape)}, but the "
                f"signature takes {specs[name].shape}"
            )
    return row_format, arrays


def write_predict_body(outputs, row_format):
    """The JSON object answering a `predict` body: `{"predictions": ...}`
    (row format) or `{"outputs": ...}`, from output name -> array."""
    if row_format:
        return {"predictions": _rows(outputs)}
    return {"outputs": _columns(outputs)}


def _function(signature, body):
    """The concrete function a request asks for."""
    name = signature_key(body)
    signatures = getattr(signature, "signatures", None)
    if signatures is None:
        return signature
    if name not in signatures:
        raise RequestError(
            f'Serving signature name: "{name}" not found in signature def'
        )
    return signatures[name]


def _tensors(arrays, specs):
    """The arrays as tensors of the signature's dtypes."""
    return {
        name: tf.constant(array, specs[name].dtype)
        for name, array in arrays.items()
    }


def _read_instances(body, specs, check_batch_size):
    """Row format: one array per input, the items stacked on axis 0."""
    instances = body["instances"]
    if not isinstance(instances, list):
        raise RequestError(
            f"JSON Value: {_text(body)} Excepting 'instances' to be an "
            "list/array"
        )
    if not instances:
        raise RequestError(
            f"JSON Value: {_text(body)} No values in 'instances' array"
        )
    check_batch_size(len(instances))
    names = sorted(specs)
    if not isinstance(instances[0], dict) and len(names) > 1:
        raise RequestError(
            "instances is a plain list, but expecting list of objects as "
            "multiple input tensors required as per tensorinfo_map"
        )
    objects = _is_named(instances[0])
    items = {}  # input name -> list of arrays, one per instance
    for index, instance in enumerate(instances):
        if objects != _is_named(instance):
            expected = "object" if objects else "value/list"
            found = "object" if _is_named(instance) else "list"
            raise RequestError(
                f"Expecting {expected} but got {found} at item {index} of "
                "input list"
            )
        named = instance if objects else {names[0]: instance}
        for name, value in named.items():
            try:
                _add_item(items, name, value, specs)
            except RequestError as error:
                key = f" key: {name}" if objects else ""
                raise RequestError(
                    f"Failed to process element: {index}{key} of "
                    f"'instances' list. Error: {error}"
                ) from None
        if objects and set(instance) != set(names):
            raise RequestError(
                f"Failed to process element: {index} of 'instances' list. "
                f"JSON object: {_text(instance)} keys must be equal to: "
                f"{','.join(names)}"
            )
    return {name: np.stack(arrays) for name, arrays in items.items()}


def _add_item(items, name, value, specs):
    """Appends one instance's value of input `name`; all must agree."""
    if name not in specs:
        raise RequestError(f"JSON object: does not have named input: {name}")
    array = _to_array(value, specs[name].dtype)
    if items.get(name):
        first = items[name][0]
        if first.size != array.size:
            raise RequestError(
                f"Expecting tensor size: {first.size} but got: {array.size}"
            )
        if first.shape != array.shape:
            raise RequestError(
                f"Expecting shape {_shape(first.shape)} but got: "
                f"{_shape(array.shape)}"
            )
    items.setdefault(name, []).append(array)


def _read_inputs(inputs, specs, check_batch_size):
    """Columnar format: each input whole."""
    values = inputs if _is_named(inputs) else {None: inputs}
    for value in values.values():
        if isinstance(value, list):
            check_batch_size(len(value))
    if not isinstance(inputs, dict) or _is_b64(inputs):
        if len(specs) > 1:
            raise RequestError(
                "inputs is a plain value/list, but expecting an object as "
                "multiple input tensors required as per tensorinfo_map"
            )
        (name,) = specs
        return {name: _to_array(inputs, specs[name].dtype)}
    arrays = {}
    for name, spec in sorted(specs.items()):
        if name not in inputs:
            raise RequestError(
                f"Missing named input: {name} in 'inputs' object."
            )
        arrays[name] = _to_array(inputs[name], spec.dtype)
    return arrays


def _to_array(value, dtype):
    """A JSON value as a dense NumPy array of `dtype` (object for strings):
    the shape is read along the first items, then every item checked."""
    shape = []
    probe = value
    while isinstance(probe, list):
        shape.append(len(probe))
        if len(shape) > MAX_RANK:
            raise RequestError(
                f"JSON Value nests over {MAX_RANK} lists: an input has at "
                f"most {MAX_RANK} dimensions"
            )
        if not probe:
            break
        probe = probe[0]
    flat = []
    _fill(value, 0, shape, dtype, flat)
    numpy_dtype = object if dtype == tf.string else dtype.as_numpy_dtype
    return np.array(flat, numpy_dtype).reshape(shape)


def _fill(value, level, shape, dtype, flat):
    """Appends the leaves of `value` to `flat`, checking the nesting."""
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise RequestError(
                f"JSON Value: {_text(value)} found at incorrect level: "
                f"{level + 1} in the JSON DOM. Expected at level: {rank}"
            )
        flat.append(_leaf(value, dtype))
        return
    if level >= rank:
        raise RequestError(
            f"Encountered list at unexpected level: {level} expected < {rank}"
        )
    if len(value) != shape[level]:
        raise RequestError(
            f"Encountered list at unexpected size: {len(value)} at level: "
            f"{level} expected size: {shape[level]}"
        )
    for item in value:
        _fill(item, level + 1, shape, dtype, flat)


def _leaf(value, dtype):
    """One JSON scalar as a value of `dtype`, as TF Serving accepts it."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if dtype == tf.string:
        if _is_b64(value):
            return _b64decode(value["b64"])
        if isinstance(value, str):
            try:
                return value.encode("utf-8")
            except UnicodeEncodeError as error:  # a lone surrogate
                raise RequestError(
                    f"JSON Value: {_text(value)} is not valid Unicode "
                    f"({error.reason} at character {error.start})"
                ) from None
        if isinstance(value, dict):
            raise RequestError(
                f"JSON Value: {_text(value)} not formatted correctly for "
                "base64 data"
            )
    elif dtype.is_floating and number:
        limit = np.finfo(dtype.as_numpy_dtype).max
        exact = 2 ** np.finfo(dtype.as_numpy_dtype).nmant * 2 - 1
        lossy = (
            abs(value) > exact
            if isinstance(value, int)
            else math.isfinite(value) and abs(value) > limit
        )
        if lossy:
            raise RequestError(
                f"Cannot convert JSON value: {_text(value)} to "
                f"{_dtype_name(dtype)} without loss of precision."
            )
        return value
    elif dtype.is_integer and isinstance(value, int) and number:
        limits = np.iinfo(dtype.as_numpy_dtype)
        if limits.min <= value <= limits.max:
            return value
    elif dtype == tf.bool and isinstance(value, bool):
        return value
    elif not (dtype.is_floating or dtype.is_integer or dtype == tf.bool):
        raise RequestError(
            f"Conversion of JSON Value: {_text(value)} to type: "
            f"{_dtype_name(dtype)}"
        )
    raise RequestError(
        f"JSON Value: {_text(value)} Type: {_json_type(value)} is not of "
        f"expected type: {_dtype_name(dtype)}"
    )


def _rows(outputs):
    """`predictions`: per example an object of outputs (or the value)."""
    batch = None
    for name, array in sorted(outputs.items()):
        if array.ndim == 0:
            raise RequestError(f"Tensor name: {name} has no shape information ")
        if batch is not None and array.shape[0] != batch:
            raise RequestError(
                f"Tensor name: {name} has inconsistent batch size: "
                f"{array.shape[0]} expecting: {batch}"
            )
        batch = array.shape[0]
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        return [_json_value(item, name) for item in array]
    return [
        {
            name: _json_value(array[i], name)
            for name, array in sorted(outputs.items())
        }
        for i in range(batch)
    ]


def _columns(outputs):
    """`outputs`: an object of whole outputs (or the one value)."""
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        return _json_value(array, name)
    return {
        name: _json_value(array, name)
        for name, array in sorted(outputs.items())
    }


def _json_value(value, name):
    """A NumPy value as JSON data, written as TF Serving writes it."""
    if isinstance(value, np.ndarray):
        if value.ndim:
            return [_json_value(item, name) for item in value]
        value = value[()]  # a NumPy scalar (or bytes)
    if isinstance(value, bytes):
        if name.endswith(BYTES_SUFFIX):
            return {"b64": base64.b64encode(value).decode("ascii")}
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.floating):
        return _decimal(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _decimal(value):
    """A float as TF Serving prints it: `%g` (six significant digits) when
    that reads back as the same value, else all the digits it needs."""
    if value.dtype not in _MAX_DIGITS:
        value = np.float32(value)
    number = float(value)
    if not math.isfinite(number):
        return number
    text = f"{number:g}"
    if value.dtype.type(text) != value:
        text = f"{number:.{_MAX_DIGITS[value.dtype]}g}"
    return float(text)


def _is_b64(value):
    return (
        isinstance(value, dict)
        and list(value) == ["b64"]
        and isinstance(value["b64"], str)
    )


def _is_named(value):
    """An object of named inputs (a `{"b64": ...}` value is not one)."""
    return isinstance(value, dict) and not _is_b64(value)


def _b64decode(text):
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise RequestError("Unable to base64 decode") from None


def _json_type(value):
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def _dtype_name(dtype):
    """TensorFlow's C++ name of a dtype (`float`, `double`, `int32`, ...)."""
    return {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)


def _shape(shape):
    return "[" + ",".join(str(size) for size in shape) + "]"


def _text(value):
    """`value` as JSON, for an error message: cut after some characters
    (a message need not repeat a large request)."""
    try:
        text = json.dumps(value, separators=(",", ":"))
    except (RecursionError, ValueError):
        return "(a value nested too deeply to quote)"
    if len(text) > _QUOTED_CHARACTERS:
        return text[:_QUOTED_CHARACTERS] + f"... ({len(text)} characters)"
    return text
