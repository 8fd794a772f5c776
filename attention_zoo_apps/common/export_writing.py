"""`write_export`: a bundle's serving module saved as a version folder,
on TensorFlow or, for a bundle trained on another backend, by a
TensorFlow process (`backend_export`); in float32 or int8, with the
convolutions' batch normalizations folded in or not."""

import contextlib

import keras

from attention_zoo.export import check_export_precision
from attention_zoo.export import export_precision
from attention_zoo.export import resolve_jit_compile
from attention_zoo.export import save_export
from attention_zoo.export.batch_norm_folding import folded_batch_norms
from attention_zoo_apps.common import backend_export


def write_export(
    bundle,
    module_class,
    path,
    jit_compile,
    metrics,
    data_fingerprint,
    precision,
    module_options,
    fold_batch_norms=False,
):
    """`SavedBundle.write_export`'s body (see there). An int8 or folded
    export drops the bundle's compiled searches before and after it is
    traced, so that it traces its own and the bundle computes as trained
    after."""
    check_export_precision(precision, jit_compile)
    if keras.backend.backend() != "tensorflow":
        # A SavedModel needs TensorFlow variables: the weights go to a
        # TensorFlow process that writes the same export.
        return backend_export.export_in_tensorflow(
            bundle,
            module_class,
            path,
            jit_compile,
            metrics,
            data_fingerprint,
            dict(
                module_options,
                precision=precision,
                fold_batch_norms=fold_batch_norms,
            ),
        )
    int8 = precision == "int8"
    jit_compile = resolve_jit_compile(jit_compile) and not int8
    rewritten = int8 or fold_batch_norms
    if rewritten:
        bundle.clear_compiled()
    try:
        with (
            export_precision(bundle.model, precision) as int8_layers,
            _folding(bundle.model, fold_batch_norms) as folded,
        ):
            module = module_class(
                bundle, jit_compile=jit_compile, **module_options
            )
            warmup = module.warmup_requests(bundle.warmup_inputs())
            return save_export(
                bundle,
                module,
                path,
                jit_compile,
                metrics,
                data_fingerprint,
                warmup,
                precision=precision,
                int8_layers=int8_layers,
                folded_batch_norms=folded,
            )
    finally:
        if rewritten:
            bundle.clear_compiled()


def _folding(model, fold_batch_norms):
    """`folded_batch_norms(model)` when asked (yields the folded
    normalizations' names), else nothing (yields None)."""
    if fold_batch_norms:
        return folded_batch_norms(model)
    return contextlib.nullcontext()
