"""`save_export`: one version folder, written atomically.

A version folder holds the SavedModel of a serving module (see
`ServingModule`), the bundle's own files beside it (its `config.json`,
vocabularies and whatever else its `save_assets` writes) and
`metadata.json` (see `attention_zoo.export.metadata`), and TF Serving's
warm-up requests when given (see `attention_zoo.export.warmup`). All of it
appears at once: nothing is visible at `path` until everything is written,
and an existing version is never replaced.
"""

import json
import os

from attention_zoo.export.atomic import atomic_directory
from attention_zoo.export.metadata import write_metadata
from attention_zoo.export.warmup import check_warmup_requests
from attention_zoo.export.warmup import write_warmup_requests

DEFAULT_SIGNATURE = "serving_default"


def serving_signatures(module):
    """The signatures `module` is saved with: its `serving_signatures()`
    (a `ServingModule`), else `{"serving_default": module.serve}`."""
    if hasattr(module, "serving_signatures"):
        return module.serving_signatures()
    if not hasattr(module, "serve"):
        raise TypeError(
            "The serving module must be a `ServingModule` or have a `serve` "
            f"tf.function. Received: {type(module).__name__}"
        )
    return {DEFAULT_SIGNATURE: module.serve}


def save_export(
    bundle,
    module,
    path,
    jit_compile,
    metrics=None,
    data_fingerprint=None,
    warmup_requests=None,
    precision="float32",
    int8_layers=None,
    folded_batch_norms=None,
):
    """Writes `module` with the bundle's assets and metadata to `path`.

    The SavedModel's signatures are `module.serving_signatures()` (by
    default `serving_default` is `module.serve`). Beside the SavedModel
    the folder holds what `bundle.save_assets` writes (its config and
    vocabularies) and `metadata.json`; all of it appears at once
    (`atomic_directory`), with TF Serving's warm-up file when
    `warmup_requests` are given. An existing `path` is never replaced (TF
    Serving assumes a version does not change): it is refused before
    anything is written, or at the end if another writer took it
    meanwhile. A failure leaves nothing at `path`.

    Args:
        bundle: the trained bundle, an object with `application` (str),
            `config` (with `to_json()`), `save_assets(directory)`,
            `vocabulary_files()` and `input_limits()` (an application's
            `SavedBundle`).
        module: a `ServingModule` (or a `tf.Module` with a `serve`
            `tf.function`).
        path: str, the version folder (`saved_models/<app>/<version>`).
        jit_compile: bool, whether `module`'s functions are XLA-compiled
            (recorded in the metadata).
        metrics: optional dict of evaluation results for the metadata.
        data_fingerprint: optional str identifying the training data (see
            `attention_zoo.export.data_fingerprint`).
        warmup_requests: optional list of `(signature_name, inputs)`, the
            requests TF Serving replays when it loads the version (see
            `attention_zoo.export.write_warmup_requests`); each must name
            one of the module's signatures and give exactly its inputs,
            with their ranks.
        precision: str, `"float32"` or `"int8"` (the functions were traced
            inside `export_precision`), recorded in the metadata.
        int8_layers: the names of the int8 layers, recorded with it.
        folded_batch_norms: the names of the batch normalizations folded
            into their convolutions (`folded_batch_norms`), or None (the
            export did not fold), recorded in the metadata.

    Returns:
        `path`.

    Raises:
        ValueError: a warm-up request that the module's signatures would
            not take (TF Serving would fail to load the version).
        FileExistsError: `path` exists (see `next_version` for a free
            number).
    """
    # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
    import tensorflow as tf

    name = os.path.basename(os.path.normpath(path))
    signatures = serving_signatures(module)
    if warmup_requests:
        check_warmup_requests(warmup_requests, signatures)
    with atomic_directory(path) as temporary:
        tf.saved_model.save(module, temporary, signatures=signatures)
        bundle.save_assets(temporary)
        write_metadata(
            temporary,
            application=bundle.application,
            config=json.loads(bundle.config.to_json()),
            jit_compile=jit_compile,
            vocabulary_files=bundle.vocabulary_files(),
            input_limits=bundle.input_limits(),
            metrics=metrics,
            data_fingerprint=data_fingerprint,
            version=int(name) if name.isdigit() else None,
            decoding=_decoding_options(module),
            precision=precision,
            int8_layers=int8_layers,
            folded_batch_norms=folded_batch_norms,
        )
        if warmup_requests:
            write_warmup_requests(temporary, warmup_requests)
    return path


def _decoding_options(module):
    """The search options a generating module reports, or None."""
    options = getattr(module, "decoding_options", None)
    return None if options is None else options()
