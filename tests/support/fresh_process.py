"""Run a script in a fresh Python that cannot import Keras or this project.

Exported SavedModels must serve with TensorFlow alone (plus the op libraries
of tensorflow-text). `run_without_project(script)` runs `script` in a
subprocess where `keras`, `keras_hub`, `attention_zoo`, `applications` and
`tensorflow_text` are blocked (`sys.modules[name] = None` makes any import
of them fail) before TensorFlow is imported, and where tensorflow-text's
custom ops are registered with `tf.load_op_library` on the `.so` files of the
installed package, found without importing it.

The script sees `tf` (imported), `np` and `json`, and `OP_LIBRARIES` (the
paths loaded); it reports results by printing one JSON line prefixed with
`RESULT ` (use `emit(obj)`); `run_without_project` returns that object.
`unregistered_ops(ops)` there lists the op types (e.g. `saved_model_ops`
of an export) that neither TensorFlow nor tensorflow-text registers, so
that the process that serves an export can also check its ops.
"""

import json
import os
import subprocess
import sys
import textwrap

BLOCKED_MODULES = (
    "keras",
    "keras_hub",
    "attention_zoo",
    "applications",
    "tensorflow_text",
)

_PRELUDE = """
import sys
for _name in {blocked!r}:
    sys.modules[_name] = None
import glob
import importlib.machinery
import json
import os

import numpy as np
import tensorflow as tf

def _load_tensorflow_text_ops(only):
    # PathFinder ignores the blocked sys.modules entry and imports nothing.
    spec = importlib.machinery.PathFinder.find_spec("tensorflow_text")
    loaded, failed = [], {{}}
    if spec is None:
        return loaded, failed
    for root in spec.submodule_search_locations:
        # Op libraries live in python/ops and python/metrics; the pybind
        # modules under core/pybinds are Python extensions, not op libraries.
        for path in sorted(glob.glob(os.path.join(root, "python", "**", "*.so"),
                                     recursive=True)):
            if only is not None and os.path.basename(path) not in only:
                continue
            try:
                tf.load_op_library(path)
                loaded.append(path)
            except Exception as error:  # noqa: BLE001
                failed[path] = str(error)[:200]
    return loaded, failed

OP_LIBRARIES, OP_LIBRARY_FAILURES = _load_tensorflow_text_ops({only!r})

def emit(obj):
    print("RESULT " + json.dumps(obj), flush=True)

def unregistered_ops(ops):
    # What neither TensorFlow nor the op libraries loaded here register.
    from tensorflow.python.framework import op_def_registry
    return sorted(op for op in ops if op_def_registry.get(op) is None)

for _name in {blocked!r}:
    assert _name not in sys.modules or sys.modules[_name] is None, _name
"""


def run_without_project(script, op_libraries=None, timeout=300, env=None):
    """Runs `script` without Keras or the project; returns what it emitted.

    Args:
        script: str, Python source run after the prelude (dedented).
        op_libraries: None to load every op library of tensorflow-text
            (`python/ops/*.so`, `python/metrics/*.so`; all load with
            TensorFlow 2.21), or a list of file names (e.g.
            `["_normalize_ops.so"]`) to load only those, which proves they
            are all an export needs.
        timeout: seconds before the subprocess is killed.
        env: dict of extra environment variables.

    Returns:
        The object passed to `emit(...)` in the script (the last one), or
        `None` if it emitted nothing.

    Raises:
        AssertionError: the subprocess failed; the message holds its output.
    """
    only = None if op_libraries is None else sorted(op_libraries)
    source = _PRELUDE.format(blocked=BLOCKED_MODULES, only=only)
    source += "\n" + textwrap.dedent(script)
    full_env = dict(os.environ)
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The fresh process must not find the repository on sys.path by accident.
    full_env.pop("PYTHONPATH", None)
    full_env.update(env or {})
    completed = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=os.path.dirname(os.path.abspath(sys.executable)),
    )
    if completed.returncode != 0:
        raise AssertionError(
            f"subprocess failed with code {completed.returncode}\n"
            f"--- stdout ---\n{completed.stdout[-4000:]}\n"
            f"--- stderr ---\n{completed.stderr[-4000:]}"
        )
    result = None
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
    return result


def saved_model_ops(path):
    """The op types of every graph and function in a SavedModel.

    Calls of the SavedModel's own functions (whose op type is a function
    name) are left out: what remains must be registered by TensorFlow or an
    op library for the model to load.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    ops = set()
    for meta_graph in proto.meta_graphs:
        library = meta_graph.graph_def.library
        functions = {f.signature.name for f in library.function}
        ops.update(node.op for node in meta_graph.graph_def.node)
        for function in library.function:
            ops.update(node.op for node in function.node_def)
        ops -= functions
    return ops
