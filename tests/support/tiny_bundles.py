"""Tiny trained bundles of the applications, and example inputs.

`tiny_bundle(application)` trains one small model per application of
`applications.registry` (its `tiny_config()`) for a single epoch on a few
generated examples (cached for the test session), so the export-metadata
and REST-adapter tests share them.
`columnar_inputs(application)` gives two examples in TF Serving's columnar
JSON layout (`{"inputs": ...}`), `row_instances` the same in the row layout
(`{"instances": [...]}`), and `signature_inputs` the tensors a signature is
called with directly.
`save_stand_in(application, path)` writes, in a second, an export that is
the application's to anything that reads only its `metadata.json` and its
signature's inputs (the serving commands' checks).
"""

import base64
import functools
import math

import numpy as np
import tensorflow as tf

from applications import registry
from tests.support import png_images

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


@functools.cache
def tiny_bundle(application):
    """APPLICATION's trained bundle with tiny sizes (one epoch)."""
    described = registry.get(application)
    config = described.tiny_config().replace(
        **CONFIG_CHANGES.get(application, {})
    )
    bundle = described.bundle_class()(config)
    count, seed = TRAINING_DATA[application]
    bundle.fit(*described.fit_arguments(count, seed=seed), verbose=0)
    return bundle


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
