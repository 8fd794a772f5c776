"""Tiny trained bundles of the applications, and example inputs.

`tiny_bundle(application, shared)` trains one small model per application
of `attention_zoo_apps.registry` (its `tiny_config()`) for a single epoch on a
few generated examples, once per test session: given the session's
`shared` fixture (`tests/support/shared_folders.py`), the first process
to ask trains it and saves it into the shared folder
`tiny-bundle-<application>`, and every other process (xdist worker)
loads it from there with the bundle class's `load`. Each process keeps
the bundle it got, so the export, serving and REST tests share them.
`tiny_export(shared, application, jit_compile)` is the bundle's export,
made once per session for every process (read-only: a test that writes
into it takes `shared_folders.copy_of`), and `loaded_export` the same
loaded once per process.
`columnar_inputs(application)` gives two examples in TF Serving's columnar
JSON layout (`{"inputs": ...}`), `row_instances` the same in the row layout
(`{"instances": [...]}`), and `signature_inputs` the tensors a signature is
called with directly.
`save_stand_in(application, path)` writes, in a second, an export that is
the application's to anything that reads only its `metadata.json` and its
signature's inputs (the inference commands' checks).
"""

import base64
import math

import numpy as np
import tensorflow as tf

from attention_zoo_apps import registry
from tests.support import png_images
from tests.support import shared_bundles
from tests.support import shared_folders

APPLICATIONS = registry.APPLICATIONS
# Application -> `name: (shape, dtype)` of its export's `serving_default`.
SIGNATURE_INPUTS = {
    "translation": {"text": ([None], tf.string)},
    "entailment": {
        "premise": ([None], tf.string),
        "hypothesis": ([None], tf.string),
    },
    "captioning": {"image": ([None], tf.string)},
    "ehr": {
        "codes": ([None, None], tf.string),
        "values": ([None, None], tf.float32),
        "times": ([None, None], tf.float32),
        "prediction_time": ([None], tf.float32),
        "note": ([None], tf.string),
    },
}

# Application -> what it changes in its tiny config, and the `(count,
# seed)` of the generated examples it trains on.
CONFIG_CHANGES = {"ehr": dict(max_events=12, max_note_tokens=10)}
TRAINING_DATA = {
    "translation": (256, 0),
    "entailment": (320, 0),
    "captioning": (40, 0),
    "ehr": (40, 5),
}


# The bundles trained here outside a test session (`tiny_bundle`).
_BUNDLES = {}


def _train(application):
    """APPLICATION's tiny bundle, trained here for one epoch."""
    described = registry.get(application)
    config = described.tiny_config().replace(
        **CONFIG_CHANGES.get(application, {})
    )
    bundle = described.bundle_class()(config)
    count, seed = TRAINING_DATA[application]
    bundle.fit(*described.fit_arguments(count, seed=seed), verbose=0)
    return bundle


def tiny_bundle(application, shared=None):
    """APPLICATION's trained bundle with tiny sizes (one epoch).

    `shared`: the session's `shared` fixture (by default
    `shared_folders.session_shared()`). With it, the bundle is trained
    once per test session, saved into the shared folder
    `tiny-bundle-<application>` and loaded from there by the other
    processes; outside a test session, trained here. Either way each
    process trains or loads it once and keeps it.
    """
    shared = shared or shared_folders.session_shared()
    if shared is not None:
        return shared_bundles.shared_bundle(
            shared,
            f"tiny-bundle-{application}",
            registry.get(application).bundle_class(),
            lambda folder: _train(application),
        )
    if application not in _BUNDLES:
        _BUNDLES[application] = _train(application)
    return _BUNDLES[application]


# What every `tiny_export` records in its `metadata.json`, and the version
# folder of each `jit_compile` setting (XLA 1, plain 2).
EXPORT_METRICS = {
    "accuracy": np.float32(0.5),
    "confusion": np.eye(2, dtype="int64"),
    "recall": {"neutral": float("nan")},
}
EXPORT_DATA = ["an example"]
EXPORT_VERSIONS = {True: "1", False: "2"}


def tiny_export(shared, application, jit_compile=None):
    """The version folder of APPLICATION's tiny bundle exported with
    `jit_compile` (None: as `export` decides, on when a GPU is visible),
    with the default export options, `metrics=EXPORT_METRICS` and the
    `data_fingerprint` of `EXPORT_DATA`.

    Made once per test session for every process, in the shared folder
    `tiny-export-<application>-<xla|plain>`, as version
    `EXPORT_VERSIONS[jit_compile]` (1 with XLA, 2 without). Read-only: a
    test that writes into it takes `shared_folders.copy_of`.
    """
    from attention_zoo.export import data_fingerprint
    from attention_zoo.export import resolve_jit_compile

    jit_compile = resolve_jit_compile(jit_compile)
    version = EXPORT_VERSIONS[jit_compile]

    def build(path):
        tiny_bundle(application, shared).export(
            str(path / version),
            jit_compile=jit_compile,
            metrics=EXPORT_METRICS,
            data_fingerprint=data_fingerprint(EXPORT_DATA),
        )

    kind = "xla" if jit_compile else "plain"
    return str(shared(f"tiny-export-{application}-{kind}", build) / version)


# The start of a script for `fresh_process.run_without_project`:
# `serve_columns(path, columns)` calls the `serving_default` of the export at
# `path` with `columnar_inputs`' JSON columns (bytes as `{"b64": ...}`) and
# returns its outputs as plain lists, strings decoded.
SERVE_COLUMNS_SCRIPT = """
import base64

def _decode(value):
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict):
        return base64.b64decode(value["b64"])
    return value.encode() if isinstance(value, str) else value

def _plain(array):
    if array.dtype == object:
        return np.vectorize(lambda b: b.decode(), otypes=[object])(
            array).tolist()
    return array.tolist()

def serve_columns(path, columns):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    specs = serve.structured_input_signature[1]
    inputs = {
        key: tf.constant(_decode(columns[key]), specs[key].dtype)
        for key in specs
    }
    outputs = serve(**inputs)
    return {key: _plain(value.numpy()) for key, value in outputs.items()}
"""

_LOADED = {}


def loaded_export(shared, application, jit_compile=None):
    """`tf.saved_model.load` of `tiny_export(shared, application,
    jit_compile)`, loaded once per process (its functions are not
    loaded again by each test file that calls them)."""
    path = tiny_export(shared, application, jit_compile)
    if path not in _LOADED:
        _LOADED[path] = tf.saved_model.load(path)
    return _LOADED[path]


def png_b64(seed):
    """A generated 32 px shapes image as base64 PNG text."""
    captioning = registry.get("captioning")
    images, _ = captioning.fit_arguments(1, seed=seed, image_size=32)
    return base64.b64encode(png_images.png(images[0])).decode("ascii")


def columnar_inputs(application):
    """Two examples as TF Serving's columnar JSON `inputs` object."""
    if application == "translation":
        (pairs,) = registry.get(application).fit_arguments(2, seed=7)
        return {"text": [source for source, _ in pairs]}
    if application == "entailment":
        (examples,) = registry.get(application).fit_arguments(2, seed=7)
        return {
            "premise": list(examples.premises),
            "hypothesis": list(examples.hypotheses),
        }
    if application == "captioning":
        return {"image": [{"b64": png_b64(7)}, {"b64": png_b64(8)}]}
    if application == "ehr":
        # Padding (""), an unknown code and a missing value (NaN).
        return {
            "codes": [
                ["lab:lactate", "rx:heparin", "never:seen"],
                ["lab:glucose", "", ""],
            ],
            "values": [[4.1, math.nan, 1.0], [7.5, 0.0, 0.0]],
            "times": [[2.0, 5.5, 6.0], [1.0, 0.0, 0.0]],
            "prediction_time": [24.0, 12.0],
            "note": ["hypotensive overnight, started pressors", ""],
        }
    raise ValueError(f"Unknown application: {application!r}")


def row_instances(columns):
    """The row layout (`instances`) of a columnar `inputs` object."""
    size = len(next(iter(columns.values())))
    return [{name: columns[name][i] for name in columns} for i in range(size)]


def signature_inputs(signature, columns):
    """The tensors of a columnar `inputs` object, for `signature(**...)`."""
    specs = signature.structured_input_signature[1]
    return {
        name: tf.constant(
            _decode_b64(columns[name])
            if specs[name].dtype == tf.string
            else np.asarray(columns[name], specs[name].dtype.as_numpy_dtype),
            specs[name].dtype,
        )
        for name in specs
    }


def _decode_b64(value):
    if isinstance(value, list):
        return [_decode_b64(item) for item in value]
    if isinstance(value, dict):
        return base64.b64decode(value["b64"])
    return value.encode("utf-8")


class StandInBundle:
    """What `save_export` reads of a bundle."""

    class config:
        @staticmethod
        def to_json():
            return "{}"

    def __init__(self, application):
        self.application = application

    def save_assets(self, directory):
        pass

    def vocabulary_files(self):
        return []

    def input_limits(self):
        return {}


def save_stand_in(application, path):
    """Writes a stand-in export of APPLICATION to the version folder `path`.

    Its `serving_default` takes the inputs of the application's export
    (`SIGNATURE_INPUTS`) and returns the first one as `translation`; its
    `metadata.json` names the application. Returns `path`.
    """
    from attention_zoo.export import save_export

    specs = [
        tf.TensorSpec(shape, dtype, name=name)
        for name, (shape, dtype) in SIGNATURE_INPUTS[application].items()
    ]

    @tf.autograph.experimental.do_not_convert
    def serve(*tensors):
        return {"translation": tensors[0]}

    module = tf.Module()
    module.serve = tf.function(serve, input_signature=specs)
    return save_export(StandInBundle(application), module, path, False)
