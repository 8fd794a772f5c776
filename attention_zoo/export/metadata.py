"""`metadata.json`: what an exported version is, written beside its model.

Every exported version folder carries one small JSON file that says where
the model came from and how to serve it: the application, its config, the
fingerprints of its vocabulary files and of its training data, its test
metrics, the input limits past which inputs are cut, the search a generating
export runs (`decoding`), whether its functions are XLA-compiled
(`jit_compile`), its `precision` (and the `int8_layers` of an int8
export), the `folded_batch_norms` of an export that folded them, when it
was written, and the versions of the packages that wrote it.
`write_metadata` writes it into the (still temporary) export folder, so it
appears atomically with the model.
"""

import datetime
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import sys

import numpy as np

METADATA_FILE = "metadata.json"
FORMAT_VERSION = 1
# Module name -> distribution name of the packages an export depends on.
PACKAGES = {
    "attention_zoo": "attention-zoo",
    "tensorflow": "tensorflow",
    "keras": "keras",
    "tensorflow_text": "tensorflow-text",
}


def resolve_jit_compile(jit_compile):
    """`jit_compile` as a bool: `None` means on when a GPU is visible.

    TF Serving runs XLA-compiled functions on CPU only when started with
    `--xla_cpu_compilation_enabled=true`, so CPU exports default to off.
    """
    if jit_compile is None:
        # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    if not isinstance(jit_compile, bool):
        raise ValueError(
            "`jit_compile` must be True, False or None. "
            f"Received: jit_compile={jit_compile!r}"
        )
    return jit_compile


def file_sha256(path):
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_fingerprint(examples):
    """A hex sha256 over training examples, stable across runs.

    `examples` is an iterable of items built from str, bytes, numbers,
    None, NumPy arrays and (nested) tuples, lists or dicts. Each value is
    hashed with its type and length, so `("ab", "c")` and `("a", "bc")`
    differ, and arrays with their dtype and shape.
    """
    digest = hashlib.sha256()
    for example in examples:
        _update(digest, example)
    return digest.hexdigest()


def _update(digest, value):
    """Feeds one value, tagged with its type and size, to `digest`."""
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        header = f"a{array.dtype.str}{array.shape}:"
        digest.update(header.encode() + array.tobytes())
    elif isinstance(value, str):
        data = value.encode("utf-8")
        digest.update(f"s{len(data)}:".encode() + data)
    elif isinstance(value, bytes):
        digest.update(f"b{len(value)}:".encode() + value)
    elif isinstance(value, dict):
        digest.update(f"d{len(value)}:".encode())
        for key in sorted(value):
            _update(digest, str(key))
            _update(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"l{len(value)}:".encode())
        for item in value:
            _update(digest, item)
    elif isinstance(value, np.generic):
        _update(digest, value.item())
    elif value is None or isinstance(value, (bool, int, float)):
        digest.update(f"n{value!r}:".encode())
    else:
        raise TypeError(f"Cannot fingerprint a {type(value).__name__}")


def package_versions():
    """Versions of attention_zoo, tensorflow, keras, tensorflow_text and
    Python (None for a package that is not installed)."""
    versions = {}
    for module, distribution in PACKAGES.items():
        loaded = sys.modules.get(module)
        version = getattr(loaded, "__version__", None)
        if version is None:
            try:
                version = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                version = None
        versions[module] = version
    versions["python"] = platform.python_version()
    return versions


def write_metadata(
    directory,
    application,
    config,
    jit_compile,
    vocabulary_files=(),
    input_limits=None,
    metrics=None,
    data_fingerprint=None,
    version=None,
    decoding=None,
    precision="float32",
    int8_layers=None,
    folded_batch_norms=None,
):
    """Writes `metadata.json` into `directory`; returns the dict written.

    Args:
        directory: str, the export folder (the temporary one of
            `atomic_directory`, so that the file appears with the model).
        application: str, the application's name (`saved_models/<app>`).
        config: dict, the application config's fields.
        jit_compile: bool, whether the exported functions are XLA-compiled.
        vocabulary_files: paths relative to `directory` of the vocabulary
            files saved there; each is listed with its sha256.
        input_limits: dict name -> int, the lengths past which inputs are
            cut (see each application's `input_limits`).
        metrics: optional dict of evaluation results (NumPy values become
            JSON numbers and lists; NaN and infinities become `null`).
        data_fingerprint: optional str, see `data_fingerprint`.
        version: optional int, the export's version number.
        decoding: optional dict, the search a generating export runs
            (beam size, penalties, sampling options), under `decoding`.
        precision: str, the precision the export computes in (`"float32"`
            or `"int8"`, see `attention_zoo.export.int8`).
        int8_layers: optional list of the layers computing in int8,
            recorded under `int8_layers` when given.
        folded_batch_norms: optional list of the batch normalizations
            folded into their convolutions, recorded under
            `folded_batch_norms` when given (an empty list too: the export
            was asked to fold and found none).
    """
    metadata = {
        "format": FORMAT_VERSION,
        "application": application,
        "version": version,
        "exported_at": datetime.datetime.now(datetime.timezone.utc)
        .replace(microsecond=0)
        .isoformat(),
        "jit_compile": bool(jit_compile),
        "precision": precision,
        "input_limits": dict(input_limits or {}),
        "config": config,
        "vocabularies": {
            name: file_sha256(os.path.join(directory, name))
            for name in vocabulary_files
        },
        "data_fingerprint": data_fingerprint,
        "metrics": None if metrics is None else _plain(metrics),
        "decoding": None if decoding is None else _plain(decoding),
        "packages": package_versions(),
    }
    if int8_layers:
        metadata["int8_layers"] = list(int8_layers)
    if folded_batch_norms is not None:
        metadata["folded_batch_norms"] = list(folded_batch_norms)
    with open(os.path.join(directory, METADATA_FILE), "w") as f:
        json.dump(metadata, f, indent=2, allow_nan=False)
        f.write("\n")
    return metadata


def read_metadata(directory):
    """The dict `write_metadata` wrote into `directory`."""
    with open(os.path.join(directory, METADATA_FILE)) as f:
        return json.load(f)


def _plain(value):
    """`value` as plain JSON data: NumPy to Python, non-finite to None."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(
        f"Metrics must be JSON data. Received a {type(value).__name__}"
    )
