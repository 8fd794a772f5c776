"""`export(..., precision="int8")` and `--export-precision int8`: the
applications' exports with their Dense layers as oneDNN int8 matmuls
(`attention_zoo.export.int8`) record it, serve without Keras or the
project, answer as the float32 export does up to int8 rounding, and leave
the bundle computing in float32."""

import json

import numpy as np
import pytest

from attention_zoo.export import EXPORT_PRECISIONS
from attention_zoo.export import int8
from attention_zoo.export import read_metadata
from attention_zoo_apps.common import flag_checks
from tests.support import fresh_process
from tests.support import tiny_bundles
from tests.support.int8_cpu import NEEDS_INT8

QUANTIZED_OP = "QuantizedMatMulWithBiasAndDequantize"
# The two generating applications: their exports decode in a loop, where
# the traced search must take the int8 layers (entailment and EHR export a
# plain forward pass, as `attention_zoo/export/int8`'s tests trace).
APPLICATIONS = ("translation", "captioning")


@pytest.fixture(scope="module")
def int8_exports(shared, tmp_path_factory):
    """Application -> `(int8 version folder, float32 version folder)`:
    its tiny bundle exported with every plain Dense layer int8 (the tiny
    layers are below `MIN_KERNEL_SIZE`), and its float32 export."""
    folder = tmp_path_factory.mktemp("int8")
    exports = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(int8, "MIN_KERNEL_SIZE", 1)
        for application in APPLICATIONS:
            bundle = tiny_bundles.tiny_bundle(application, shared)
            path = bundle.export(
                str(folder / application / "1"), precision="int8"
            )
            float32 = tiny_bundles.tiny_export(shared, application, False)
            exports[application] = (path, float32)
    return exports


@pytest.fixture(scope="module")
def served(int8_exports):
    """Application -> `{"int8"|"float32": outputs}` from one fresh
    process without Keras or the project."""
    cases = [
        [application, tiny_bundles.columnar_inputs(application), paths]
        for application, paths in int8_exports.items()
    ]
    return fresh_process.run_without_project(
        tiny_bundles.SERVE_COLUMNS_SCRIPT
        + f"""
results = {{}}
for application, columns, paths in json.loads({json.dumps(cases)!r}):
    for name, path in zip(("int8", "float32"), paths):
        results.setdefault(application, {{}})[name] = serve_columns(
            path, columns
        )
emit(results)
"""
    )


@NEEDS_INT8
@pytest.mark.parametrize("application", APPLICATIONS)
def test_an_int8_export_says_so_and_holds_the_int8_op(
    application, int8_exports, shared
):
    path, _ = int8_exports[application]
    metadata = read_metadata(path)
    assert metadata["precision"] == "int8"
    assert metadata["jit_compile"] is False  # the op has no XLA kernel
    bundle = tiny_bundles.tiny_bundle(application, shared)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(int8, "MIN_KERNEL_SIZE", 1)
        dense = [layer.name for layer in int8.int8_candidates(bundle.model)]
    assert metadata["int8_layers"] == dense and dense
    ops = fresh_process.saved_model_ops(path)
    assert QUANTIZED_OP in ops and "QuantizeV2" in ops
    float32_ops = fresh_process.saved_model_ops(int8_exports[application][1])
    assert QUANTIZED_OP not in float32_ops


@NEEDS_INT8
@pytest.mark.parametrize("application", APPLICATIONS)
def test_it_serves_without_the_project_as_float32_does(application, served):
    outputs = served[application]
    assert sorted(outputs["int8"]) == sorted(outputs["float32"])
    for name, expected in outputs["float32"].items():
        got = outputs["int8"][name]
        if expected and isinstance(np.ravel(expected)[0], str):
            # Tiny models' texts: the same words (every application's
            # tiny example decodes identically in int8 here).
            assert got == expected, name
        elif np.shape(got) == np.shape(expected):
            # Probabilities, risks, attention: int8 rounding, not more.
            np.testing.assert_allclose(got, expected, atol=0.05, err_msg=name)


@NEEDS_INT8
def test_the_bundle_computes_in_float32_after_an_int8_export(
    int8_exports, shared
):
    bundle = tiny_bundles.tiny_bundle("translation", shared)
    texts = ["a b c"]
    before = bundle.translate(texts)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(int8, "MIN_KERNEL_SIZE", 1)
        assert "call" not in vars(bundle.model.get_layer("logits"))
    assert bundle.translate(texts) == before
    assert all(
        "call" not in vars(layer)
        for layer in int8.int8_candidates(bundle.model, 1)
    )


def test_the_flag_offers_the_export_precisions():
    # Kept apart so that the flags are checked before Keras is imported.
    assert flag_checks.EXPORT_PRECISIONS == EXPORT_PRECISIONS
