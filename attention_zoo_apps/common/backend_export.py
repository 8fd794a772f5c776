"""Exports of a bundle trained on a Keras backend other than TensorFlow.

A SavedModel holds TensorFlow variables and functions, so a model trained
on JAX (`KERAS_BACKEND=jax`) cannot write one itself. There,
`SavedBundle.write_export` calls `export_in_tensorflow`: it saves the
bundle (config, vocabularies, weights) to a temporary folder and runs
this module in a second process on the TensorFlow backend, which loads
that bundle (`SavedBundle.load`) and writes the export with the same
serving module and options: the same SavedModel a TensorFlow-trained run
writes, which loads without Keras as every export does.

    KERAS_BACKEND=tensorflow python -m attention_zoo_apps.common.backend_export
    \
        REQUEST.json
"""

import importlib
import json
import os
import subprocess
import sys
import tempfile

import keras

from attention_zoo.decoding import searches

# The request file's fields: see `export_in_tensorflow`.
REQUEST_FIELDS = (
    "bundle",
    "bundle_dir",
    "module",
    "path",
    "jit_compile",
    "metrics",
    "data_fingerprint",
    "options",
)


def export_in_tensorflow(
    bundle, module_class, path, jit_compile, metrics, data_fingerprint, options
):
    """Writes `bundle`'s export to `path` from a TensorFlow process.

    Args:
        bundle: the trained `SavedBundle` (any backend).
        module_class: its `ServingModule` class (importable by name).
        path: str, the version folder to write.
        jit_compile: bool or None (None: on when the TensorFlow process
            sees a GPU).
        metrics: dict or None, JSON-serialisable (NumPy numbers become
            floats).
        data_fingerprint: str or None.
        options: dict, the module's keyword options (JSON values, or a
            search: `attention_zoo.decoding.searches.serialize`).

    Returns:
        `path`.

    Raises:
        RuntimeError: the TensorFlow process failed; its exit status and
            the last lines it printed are in the message.
    """
    with tempfile.TemporaryDirectory(prefix="attention-zoo-export-") as tmp:
        bundle_dir = os.path.join(tmp, "bundle")
        bundle.save(bundle_dir)
        request = {
            "bundle": _class_name(type(bundle)),
            "bundle_dir": bundle_dir,
            "module": _class_name(module_class),
            "path": os.path.abspath(path),
            "jit_compile": jit_compile,
            "metrics": metrics,
            "data_fingerprint": data_fingerprint,
            "options": options,
        }
        request_file = os.path.join(tmp, "request.json")
        with open(request_file, "w") as f:
            json.dump(request, f, default=_plain)
        command = [sys.executable, "-m", __name__, request_file]
        result = subprocess.run(
            command,
            env=tensorflow_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    if result.returncode != 0:
        tail = "\n".join(result.stdout.strip().splitlines()[-15:])
        raise RuntimeError(
            f"The export of {path} on the TensorFlow backend failed (exit "
            f"status {result.returncode} of {' '.join(command)}):\n{tail}"
        )
    return path


def tensorflow_environment():
    """This process's environment with `KERAS_BACKEND=tensorflow`, and
    this project's folder first on `PYTHONPATH` (a source checkout runs
    as an installed package does)."""
    here = os.path.abspath(
        __file__
    )  # attention_zoo_apps/common/backend_export.py
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    env["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    return env


def _plain(value):
    """JSON for NumPy numbers and arrays (in `metrics`), and for a search
    (in `options`; the serving module reads it back with `searches.get`)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, searches.SEARCHES):
        return searches.serialize(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _class_name(cls):
    """`"module:Class"` of a class, for `_named_class`."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _named_class(name):
    """The class `_class_name` named (imports its module)."""
    module_name, class_name = name.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def write_requested_export(request):
    """The TensorFlow process's work: loads the bundle of `request` (a
    dict of `REQUEST_FIELDS`) and writes its export. Returns the path."""
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            "backend_export runs on the TensorFlow backend: set "
            "KERAS_BACKEND=tensorflow"
        )
    missing = [name for name in REQUEST_FIELDS if name not in request]
    if missing:
        raise ValueError(f"The export request lacks {', '.join(missing)}")
    bundle = _named_class(request["bundle"]).load(request["bundle_dir"])
    module_class = _named_class(request["module"])
    return bundle.write_export(
        module_class,
        request["path"],
        request["jit_compile"],
        request["metrics"],
        request["data_fingerprint"],
        **request["options"],
    )


def main(argv=None):
    """`python -m attention_zoo_apps.common.backend_export REQUEST.json`."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        write_requested_export(json.load(f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
