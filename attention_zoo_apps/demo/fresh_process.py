"""Serving an export in a fresh Python that has TensorFlow and nothing of
ours, the way a server would.

`serve_in_fresh_process(export_dir, inputs)` runs this file as a script in
a new interpreter. Before TensorFlow is imported the script blocks Keras,
keras-hub, tensorflow-text and this project (`sys.modules[name] = None`
makes importing them fail), then registers tensorflow-text's custom ops with
`tf.load_op_library` on the `.so` files of the installed package (found
without importing it), loads the SavedModel, calls its `serving_default`
signature once to warm it up and `repeats` more times to time it.

The request goes in on stdin and the answer comes back on stdout as JSON
lines: inputs are named lists (bytes as `{"b64": "..."}`, TF Serving's JSON
convention), outputs come back as lists, strings decoded as UTF-8.
"""

import base64
import glob
import importlib.machinery
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

BLOCKED_MODULES = (
    "keras",
    "keras_hub",
    "tensorflow_text",
    "attention_zoo",
    "attention_zoo_apps",
)
RESULT_PREFIX = "RESULT "


def serve_in_fresh_process(export_dir, inputs, repeats=5, timeout=600):
    """Loads `export_dir` in a new Python without Keras and calls it.

    Args:
        export_dir: str, a SavedModel folder (a version folder).
        inputs: dict of the signature's input name -> nested list of one
            batch (strings as str, bytes as `{"b64": ...}`).
        repeats: int, timed calls after the warm-up call.
        timeout: seconds before the process is killed.

    Returns:
        A dict: `outputs` (name -> nested list), `latency_ms` (median time
        of a timed call per example), `first_call_ms` (the warm-up call),
        `load_seconds`, `batch_size`, `op_libraries` (how many of
        tensorflow-text's libraries were registered) and `tensorflow`
        (its version).

    Raises:
        RuntimeError: the process failed; the message holds its output.
    """
    request = {
        "export": os.path.abspath(export_dir),
        "inputs": inputs,
        "repeats": repeats,
    }
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The fresh process must not find this checkout through PYTHONPATH.
    env.pop("PYTHONPATH", None)
    completed = subprocess.run(
        [sys.executable, os.path.abspath(__file__)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    lines = completed.stdout.splitlines()
    results = [line for line in lines if line.startswith(RESULT_PREFIX)]
    if completed.returncode != 0 or not results:
        raise RuntimeError(
            f"serving {export_dir} in a fresh process failed (exit code "
            f"{completed.returncode})\n--- stdout ---\n"
            f"{completed.stdout[-3000:]}\n--- stderr ---\n"
            f"{completed.stderr[-3000:]}"
        )
    return json.loads(results[-1][len(RESULT_PREFIX) :])


def _load_tensorflow_text_ops(tf):
    """Registers tensorflow-text's op libraries; returns how many loaded."""
    # PathFinder ignores the blocked sys.modules entry and imports nothing.
    spec = importlib.machinery.PathFinder.find_spec("tensorflow_text")
    if spec is None:
        return 0
    loaded = 0
    for root in spec.submodule_search_locations:
        # Op libraries live under python/ (ops, metrics); the pybind
        # extensions under core/pybinds are not op libraries.
        pattern = os.path.join(root, "python", "**", "*.so")
        for path in sorted(glob.glob(pattern, recursive=True)):
            try:
                tf.load_op_library(path)
                loaded += 1
            except Exception:  # noqa: BLE001 (a library this TF lacks)
                pass
    return loaded


def _tensor(value, spec, tf):
    """A request value as a tensor of the signature's `spec`."""

    def decode(item):
        if isinstance(item, list):
            return [decode(x) for x in item]
        if isinstance(item, dict):
            return base64.b64decode(item["b64"])
        return item.encode("utf-8") if isinstance(item, str) else item

    if spec.dtype == tf.string:
        return tf.constant(decode(value), tf.string)
    return tf.constant(np.asarray(value, spec.dtype.as_numpy_dtype))


def _plain(array):
    """A NumPy output as JSON-ready lists, bytes decoded."""
    if array.dtype.kind in "SO":
        flat = [
            x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)
            for x in array.reshape(-1)
        ]
        return _reshape(flat, array.shape)
    return array.tolist()


def _reshape(flat, shape):
    if not shape:
        return flat[0]
    size = len(flat) // shape[0] if shape[0] else 0
    return [
        _reshape(flat[i * size : (i + 1) * size], shape[1:])
        for i in range(shape[0])
    ]


def _serve(request):
    """Loads, warms up and times the export; returns the answer dict."""
    # lazy: the script blocks Keras and this project before TensorFlow
    # starts (`__main__` below); the module that imports it needs none.
    import tensorflow as tf

    op_libraries = _load_tensorflow_text_ops(tf)
    start = time.perf_counter()
    loaded = tf.saved_model.load(request["export"])
    signature = loaded.signatures["serving_default"]
    load_seconds = time.perf_counter() - start
    specs = signature.structured_input_signature[1]
    inputs = {
        name: _tensor(request["inputs"][name], spec, tf)
        for name, spec in specs.items()
    }
    batch_size = int(next(iter(inputs.values())).shape[0])
    start = time.perf_counter()
    outputs = signature(**inputs)  # traces and warms up
    first_call = time.perf_counter() - start
    timings = []
    for _ in range(request["repeats"]):
        start = time.perf_counter()
        outputs = signature(**inputs)
        timings.append(time.perf_counter() - start)
    median = statistics.median(timings) if timings else first_call
    for name in BLOCKED_MODULES:  # nothing imported them behind our back
        assert sys.modules.get(name) is None, name
    return {
        "outputs": {k: _plain(v.numpy()) for k, v in outputs.items()},
        "latency_ms": 1000.0 * median / max(batch_size, 1),
        "first_call_ms": 1000.0 * first_call,
        "load_seconds": load_seconds,
        "batch_size": batch_size,
        "op_libraries": op_libraries,
        "tensorflow": tf.__version__,
    }


if __name__ == "__main__":
    # This file's folder is sys.path[0]: drop it, so that nothing of the
    # project can be found by accident, and block the rest.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    for blocked in BLOCKED_MODULES:
        sys.modules[blocked] = None
    answer = _serve(json.loads(sys.stdin.read()))
    print(RESULT_PREFIX + json.dumps(answer), flush=True)
