"""Tiny trained bundles of the four applications, and example inputs.

`tiny_bundle(application)` trains one small model per application for a
single epoch on a few generated examples (cached for the test session), so
the export-metadata and REST-adapter tests share them.
`columnar_inputs(application)` gives two examples in TF Serving's columnar
JSON layout (`{"inputs": ...}`), `row_instances` the same in the row layout
(`{"instances": [...]}`), and `signature_inputs` the tensors a signature is
called with directly.
"""

import base64
import functools
import math

import numpy as np
import tensorflow as tf

from applications import synthetic_workloads
from tests.tiny_configs import TINY_CONFIGS
from tests.tiny_configs import TINY_EHR

APPLICATIONS = synthetic_workloads.APPLICATIONS

# Application -> its tiny config, and the `(count, seed)` of the generated
# examples it trains on.
CONFIGS = dict(
    TINY_CONFIGS, ehr=TINY_EHR.replace(max_events=12, max_note_tokens=10)
)
TRAINING_DATA = {
    "translation": (256, 0),
    "entailment": (320, 0),
    "captioning": (40, 0),
    "ehr": (40, 5),
}


@functools.cache
def tiny_bundle(application):
    """A trained `Translator`, `EntailmentClassifier`, `Captioner` or
    `RiskModel` with tiny sizes (one epoch)."""
    bundle_class = synthetic_workloads.bundle_class(application)
    bundle = bundle_class(CONFIGS[application])
    count, seed = TRAINING_DATA[application]
    data = synthetic_workloads.fit_arguments(application, count, seed=seed)
    bundle.fit(*data, verbose=0)
    return bundle


def png_b64(seed):
    """A generated 32 px shapes image as base64 PNG text."""
    from applications.captioning.shapes import make_synthetic_shapes

    image = make_synthetic_shapes(1, image_size=32, seed=seed).images[0]
    png = tf.io.encode_png(tf.cast(image * 255, tf.uint8)).numpy()
    return base64.b64encode(png).decode("ascii")


def columnar_inputs(application):
    """Two examples as TF Serving's columnar JSON `inputs` object."""
    if application == "translation":
        from applications.translation import data

        pairs = data.make_synthetic_pairs(2, seed=7).pairs
        return {"text": [source for source, _ in pairs]}
    if application == "entailment":
        from applications.entailment import data

        examples = data.make_synthetic_entailment(2, seed=7).examples
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
