"""Run a script in a Python that cannot import Keras or this project.

Exported SavedModels must serve with TensorFlow alone (plus the op libraries
of tensorflow-text). `run_without_project(script)` runs `script` in a
subprocess where `keras`, `keras_hub`, `attention_zoo`, `applications` and
`tensorflow_text` are blocked (`sys.modules[name] = None` makes any import
of them fail) before TensorFlow is imported, and where tensorflow-text's
custom ops are registered with `tf.load_op_library` on the `.so` files of the
installed package, found without importing it.

The script sees `tf` (imported), `np` and `json`, and `OP_LIBRARIES` (the
paths loaded); it reports results with `emit(obj)` (JSON-serialisable);
`run_without_project` returns the last object emitted. `unregistered_ops(ops)`
there lists the op types (e.g. `saved_model_ops` of an export) that neither
TensorFlow nor tensorflow-text registers, so that the process that serves an
export can also check its ops.

One such process per test process runs the scripts one after another (each
in a namespace of its own; after each, the blocked modules must still be
blocked), as a serving process loads one export after another: importing
TensorFlow and the op libraries (about 3 s on the 2-core machine) is paid
once per pytest worker rather than once per script. A script that asks for
particular op libraries or environment variables gets a process of its own.
"""

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import textwrap
import time

BLOCKED_MODULES = (
    "keras",
    "keras_hub",
    "attention_zoo",
    "attention_zoo_apps",
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

def unregistered_ops(ops):
    # What neither TensorFlow nor the op libraries loaded here register.
    from tensorflow.python.framework import op_def_registry
    return sorted(op for op in ops if op_def_registry.get(op) is None)

for _name in {blocked!r}:
    assert _name not in sys.modules or sys.modules[_name] is None, _name
"""


# Runs requests read from stdin, one JSON line each (`{"script": ...}`),
# and answers each with one JSON line on the real stdout: the last object
# emitted (as JSON text), what the script printed, and its traceback if it
# failed.
_SERVE_SCRIPTS = """
import contextlib
import io
import traceback

_ANSWERS = sys.stdout
_BASE = dict(globals())
for _line in sys.stdin:
    _emitted = []
    _namespace = dict(_BASE)
    _namespace["emit"] = lambda obj: _emitted.append(json.dumps(obj))
    _printed = io.StringIO()
    _error = None
    try:
        with contextlib.redirect_stdout(_printed):
            exec(compile(json.loads(_line)["script"], "<script>", "exec"),
                 _namespace)
    except BaseException:
        _error = traceback.format_exc()
    # Whatever the script did, the next one starts with every block back.
    _lifted = [_name for _name in {blocked!r} if sys.modules.get(_name)]
    for _name in {blocked!r}:
        sys.modules[_name] = None
    if _lifted and _error is None:
        _error = ", ".join(_lifted) + " was imported"
    _ANSWERS.write(json.dumps({{
        "result": _emitted[-1] if _emitted else None,
        "printed": _printed.getvalue()[-4000:],
        "error": _error,
    }}) + "\\n")
    _ANSWERS.flush()
"""


# A process of its own prints what the script emits, prefixed with RESULT.
_EMIT_LINES = """
def emit(obj):
    print("RESULT " + json.dumps(obj), flush=True)

"""


def _process_options(env):
    """The command's options, however it is run: extra `env` on top of this
    process's environment, but never the repository on `sys.path`."""
    full_env = dict(os.environ)
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The fresh process must not find the repository on sys.path by accident.
    full_env.pop("PYTHONPATH", None)
    full_env.update(env or {})
    return {
        "text": True,
        "env": full_env,
        "cwd": os.path.dirname(os.path.abspath(sys.executable)),
    }


class _ScriptServer:
    """The process that runs this test process's scripts, started on first
    use; a script that fails leaves it running, one that times out or kills
    it takes it down (the next script starts another)."""

    def __init__(self):
        self._log = tempfile.TemporaryFile("w+")
        source = _PRELUDE.format(blocked=BLOCKED_MODULES, only=None)
        source += _SERVE_SCRIPTS.format(blocked=BLOCKED_MODULES)
        self._process = subprocess.Popen(
            [sys.executable, "-c", source],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            **_process_options(None),
        )

    def run(self, script, timeout):
        """The answer to `script`, or `None` if the process died or ran
        past `timeout` (the caller then reads `log_tail` and `stop`s it)."""
        try:
            self._process.stdin.write(json.dumps({"script": script}) + "\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            return None
        deadline = time.monotonic() + timeout
        while self._process.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            readable, _, _ = select.select([self._process.stdout], [], [], left)
            if readable:
                line = self._process.stdout.readline()
                if line:
                    return json.loads(line)
        return None

    def log_tail(self):
        self._log.seek(0)
        return self._log.read()[-4000:]

    def stop(self):
        """Ends the process and closes its pipes and log."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._log):
            try:
                stream.close()
            except BrokenPipeError:
                pass


_server = None


@atexit.register
def _stop_server():
    if _server is not None:
        _server.stop()


def run_without_project(script, op_libraries=None, timeout=300, env=None):
    """Runs `script` without Keras or the project; returns what it emitted.

    Args:
        script: str, Python source run after the prelude (dedented).
        op_libraries: None to load every op library of tensorflow-text
            (`python/ops/*.so`, `python/metrics/*.so`; all load with
            TensorFlow 2.21), or a list of file names (e.g.
            `["_normalize_ops.so"]`) to load only those, which proves they
            are all an export needs (in a process of its own).
        timeout: seconds before the process running it is killed.
        env: dict of extra environment variables (a process of its own).

    Returns:
        The object passed to `emit(...)` in the script (the last one), or
        `None` if it emitted nothing.

    Raises:
        AssertionError: the script failed; the message holds its output.
    """
    script = textwrap.dedent(script)
    if op_libraries is not None or env:
        only = None if op_libraries is None else sorted(op_libraries)
        return _run_alone(script, only, timeout, env)
    global _server
    if _server is None:
        _server = _ScriptServer()
    answer = _server.run(script, timeout)
    if answer is None:
        log = _server.log_tail()
        _server.stop()
        _server = None
        raise AssertionError(
            f"the process running scripts without the project died or took"
            f" over {timeout} s\n--- its stderr ---\n{log}"
        )
    if answer["error"] is not None:
        raise AssertionError(
            f"the script failed\n--- printed ---\n{answer['printed']}\n"
            f"--- traceback ---\n{answer['error']}"
        )
    return None if answer["result"] is None else json.loads(answer["result"])


def _run_alone(script, only, timeout, env):
    """`run_without_project` in a new process that loads `only` (the op
    libraries' file names; all if None) and has `env` set."""
    source = _PRELUDE.format(blocked=BLOCKED_MODULES, only=only)
    source += _EMIT_LINES + script
    completed = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        timeout=timeout,
        **_process_options(env),
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
