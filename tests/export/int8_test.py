"""`attention_zoo.export.int8`: large `Dense` layers as oneDNN int8
matmuls in traced functions, checked against NumPy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import int8
from tests.support.int8_cpu import NEEDS_INT8

QUANTIZED_OP = "QuantizedMatMulWithBiasAndDequantize"


def _reference_quantize(kernel):
    """Per column: scale max|w| / 127, round half to even, clip."""
    quantized = np.zeros(kernel.shape, np.int8)
    scales = np.ones(kernel.shape[1], np.float32)
    for n in range(kernel.shape[1]):
        largest = np.abs(kernel[:, n]).max()
        if largest > 0:
            scales[n] = largest / 127.0
            quantized[:, n] = np.clip(
                np.rint(kernel[:, n] / scales[n]), -127, 127
            )
    return quantized, scales


def test_kernels_quantize_per_column_as_numpy_does():
    rng = np.random.default_rng(0)
    kernel = rng.standard_normal((6, 5)).astype("float32")
    kernel[:, 2] *= 100.0  # a column of its own scale
    kernel[:, 4] = 0.0  # an all-zero column keeps scale 1
    quantized, scales = int8.quantize_kernel(kernel)
    expected, expected_scales = _reference_quantize(kernel)
    np.testing.assert_array_equal(quantized, expected)
    np.testing.assert_allclose(scales, expected_scales, rtol=1e-6)
    assert quantized.dtype == np.int8 and scales[4] == 1.0
    assert np.abs(quantized).max(axis=0)[:4].tolist() == [127] * 4
    # Within half a step of each column's scale.
    error = np.abs(quantized * scales - kernel)
    assert np.all(error <= scales / 2 + 1e-6)


@NEEDS_INT8
@pytest.mark.parametrize(
    "shape, shift",
    [((32, 48), -0.3), ((1, 48), 0.0), ((2, 3, 48), 0.7), ((0, 48), 0.0)],
    ids=["mixed-signs", "one-row", "rank-3", "empty"],
)
def test_int8_matmul_is_the_float_product(shape, shift):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) + shift).astype("float32")
    kernel = (rng.standard_normal((48, 40)) * 0.1).astype("float32")
    bias = rng.standard_normal(40).astype("float32")
    quantized, scales = int8.quantize_kernel(kernel)
    run = tf.function(lambda t: int8.int8_matmul(t, quantized, scales, bias))
    got = run(tf.constant(x)).numpy()
    expected = x @ kernel + bias
    assert got.shape == expected.shape
    if expected.size:
        # 8 bits for the inputs and the weights: errors of a few tenths of
        # a percent of the largest product, not more.
        size = np.abs(expected - bias).max()
        assert np.abs(got - expected).max() < 0.02 * size
        assert np.abs(got - expected).max() > 0  # it is not float32
        # The per-call bias (the shift) is not kept from an earlier call.
        moved = x - 2.0
        again = run(tf.constant(moved)).numpy()
        assert np.abs(again - (moved @ kernel + bias)).max() < 0.02 * size
    ops = [
        node.op
        for node in run.get_concrete_function(tf.TensorSpec(shape, tf.float32))
        .graph.as_graph_def()
        .node
    ]
    assert QUANTIZED_OP in ops


def _model():
    inputs = keras.Input((16,))
    hidden = keras.layers.Dense(64, activation="tanh", name="large")(inputs)
    outputs = keras.layers.Dense(4, name="small")(hidden)
    return keras.Model(inputs, outputs, name="two_dense")


@NEEDS_INT8
def test_only_large_dense_layers_turn_int8_and_only_inside(monkeypatch):
    monkeypatch.setattr(int8, "MIN_KERNEL_SIZE", 16 * 64)
    model = _model()
    x = np.random.default_rng(2).standard_normal((8, 16)).astype("float32")
    before = model(x).numpy()
    with int8.int8_dense_layers(model) as names:
        assert names == ["large"]
        traced = tf.function(lambda t: model(t))
        inside = traced(tf.constant(x)).numpy()
    # The function traced inside keeps its int8 graph.
    graph = traced.get_concrete_function(tf.constant(x)).graph.as_graph_def()
    assert [node.op for node in graph.node].count(QUANTIZED_OP) == 1
    np.testing.assert_array_equal(traced(tf.constant(x)).numpy(), inside)
    # Close to float32 (tanh of an int8 product), but computed in int8.
    assert 0 < np.abs(inside - before).max() < 0.05 * np.abs(before).max()
    # Afterwards the layer is float32 again, bit for bit.
    np.testing.assert_array_equal(model(x).numpy(), before)
    assert "call" not in vars(model.get_layer("large"))


def test_the_probe_says_whether_the_op_runs_here():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 48)).astype("float32")
    quantized, scales = int8.quantize_kernel(
        rng.standard_normal((48, 40)).astype("float32")
    )
    run = tf.function(lambda t: int8.int8_matmul(t, quantized, scales))
    try:
        got = run(tf.constant(x)).numpy()
    except tf.errors.OpError:
        got = None  # AVX2 only: the op returns nothing
    expected = x @ (quantized * scales)
    right = got is not None and got.shape == expected.shape
    right = (
        right and np.abs(got - expected).max() < 0.02 * np.abs(expected).max()
    )
    assert int8.int8_available() == right


def test_a_cpu_that_cannot_run_the_op_refuses_int8_exports(monkeypatch):
    monkeypatch.setattr(int8, "int8_available", lambda: False)
    monkeypatch.setattr(int8, "MIN_KERNEL_SIZE", 16 * 64)
    model = _model()
    with pytest.raises(int8.Int8Unavailable, match="AVX-512 VNNI or AMX"):
        with int8.int8_dense_layers(model):
            pass
    with pytest.raises(int8.Int8Unavailable, match="export float32"):
        int8.check_model_precision(model, "int8")
    int8.check_model_precision(model, "float32")  # nothing to refuse
    assert "call" not in vars(model.get_layer("large"))


def test_a_model_without_a_large_layer_is_refused():
    with pytest.raises(ValueError, match="two_dense has no Dense layer"):
        with int8.int8_dense_layers(_model()):
            pass


def test_the_export_precisions_are_checked():
    int8.check_export_precision("float32", jit_compile=True)
    int8.check_export_precision("int8", jit_compile=False)
    with pytest.raises(ValueError, match="precision 'int4'"):
        int8.check_export_precision("int4", jit_compile=False)
    with pytest.raises(ValueError, match="XLA cannot compile"):
        int8.check_export_precision("int8", jit_compile=True)
    with int8.export_precision(_model(), "float32") as names:
        assert names is None
