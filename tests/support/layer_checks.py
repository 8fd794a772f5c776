"""Shared layer-test harness, modelled on `keras/src/testing/test_case.py`.

`run_layer_test` checks, for one layer class and one input:
config round trips, built weights, a symbolic call with `None` dimensions
against `compute_output_shape`, an eager call, one training step compiled
with XLA (`train_on_batch`: `fit`'s step without its data pipeline), an
XLA-compiled forward equal to eager, and a `mixed_bfloat16` copy.
Inputs may be one array or a dict (`layer(**inputs)`).
"""

import json
import os

import keras
import numpy as np
from keras import ops

BACKEND = keras.backend.backend()


def jit(fn):
    """Compiles `fn` with XLA on the active backend."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    raise NotImplementedError(f"No XLA helper for backend {BACKEND!r}")


def to_numpy(x):
    if isinstance(x, (tuple, list)):
        return type(x)(to_numpy(v) for v in x)
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    return np.asarray(ops.convert_to_numpy(x))


def call_layer(layer, inputs, **kwargs):
    if isinstance(inputs, dict):
        return layer(**inputs, **kwargs)
    return layer(inputs, **kwargs)


def _symbolic(inputs):
    """KerasTensors with `None` batch and time dimensions."""

    def one(x, name=None):
        x = np.asarray(x)
        shape = (None,) * (x.ndim - 2) + tuple(x.shape[-1:])
        if x.ndim == 2:
            shape = (None,) if x.dtype == bool else x.shape[-1:]
        return keras.Input(shape=shape, dtype=str(x.dtype), name=name)

    if isinstance(inputs, dict):
        return {k: one(v, k) for k, v in inputs.items()}
    if isinstance(inputs, list):
        return [one(x) for x in inputs]
    return one(inputs)


def _first(output):
    return output[0] if isinstance(output, (tuple, list)) else output


def assert_config_round_trip(layer):
    config = layer.get_config()
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config
    serialized = keras.saving.serialize_keras_object(layer)
    restored = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(serialized))
    )
    assert type(restored) is type(layer)
    assert restored.get_config() == config


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output_shape,
    expected_num_trainable_weights=None,
    expected_output_dtype="float32",
    call_kwargs=None,
    run_training=True,
    run_symbolic=True,
    run_mixed_precision=True,
    atol=1e-5,
):
    """Runs the standard checks; returns the eager output for further tests.

    Args:
        layer_cls: the layer class.
        init_kwargs: dict, constructor arguments.
        input_data: array, list of arrays (called as `layer(inputs)`) or
            dict of arrays (called as `layer(**inputs)`).
        expected_output_shape: tuple, shape of the (first) output.
        expected_num_trainable_weights: optional int.
        expected_output_dtype: dtype name of the output in float32.
        call_kwargs: dict of non-tensor call arguments (flags).
        run_training: bool, also train one step with `jit_compile=True`.
        run_symbolic: bool, also call on `None`-shaped symbolic inputs.
        run_mixed_precision: bool, also check `mixed_bfloat16`.
        atol: tolerance of XLA against eager.
    """
    call_kwargs = call_kwargs or {}
    layer = layer_cls(**init_kwargs)
    assert_config_round_trip(layer)

    # Eager call.
    output = call_layer(layer, input_data, **call_kwargs)
    main = _first(output)
    assert tuple(main.shape) == tuple(expected_output_shape), (
        f"{tuple(main.shape)} != {tuple(expected_output_shape)}"
    )
    assert keras.backend.standardize_dtype(main.dtype) == expected_output_dtype
    if expected_num_trainable_weights is not None:
        assert len(layer.trainable_weights) == expected_num_trainable_weights
    assert np.all(np.isfinite(to_numpy(main)))
    # Config survives building, too.
    assert_config_round_trip(layer)

    # XLA-compiled forward equals eager.
    compiled = jit(lambda: _first(call_layer(layer, input_data, **call_kwargs)))
    np.testing.assert_allclose(
        to_numpy(compiled()), to_numpy(main), atol=atol, rtol=1e-4
    )

    if run_symbolic:
        symbolic = _symbolic(input_data)
        fresh = layer_cls(**init_kwargs)
        sym_out = _first(call_layer(fresh, symbolic, **call_kwargs))
        if not call_kwargs.get("return_attention_scores"):
            if isinstance(symbolic, dict):
                shapes = {f"{k}_shape": v.shape for k, v in symbolic.items()}
                expected = fresh.compute_output_shape(**shapes)
            elif isinstance(symbolic, list):
                expected = fresh.compute_output_shape(
                    [x.shape for x in symbolic]
                )
            else:
                expected = fresh.compute_output_shape(symbolic.shape)
            if expected and isinstance(expected[0], (tuple, list)):
                expected = expected[0]  # several outputs: the first
            assert tuple(sym_out.shape) == tuple(expected), (
                f"symbolic {sym_out.shape} != computed {expected}"
            )
        if run_training:
            model = keras.Model(symbolic, sym_out)
            model.compile(optimizer="sgd", loss="mse", jit_compile=True)
            model.optimizer.build(model.trainable_variables)  # traces once
            target = np.zeros(expected_output_shape, "float32")
            loss = model.train_on_batch(input_data, target)
            assert np.isfinite(loss)

    if run_mixed_precision:
        mixed = layer_cls(**init_kwargs, dtype="mixed_bfloat16")
        out = _first(call_layer(mixed, input_data, **call_kwargs))
        assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
        assert np.all(np.isfinite(to_numpy(ops.cast(out, "float32"))))
        for weight in mixed.weights:
            assert weight.dtype == "float32", weight.path
        for sublayer in mixed._flatten_layers(include_self=True):
            assert sublayer.dtype_policy.name == "mixed_bfloat16", sublayer.name
    return output


def assert_model_round_trip(model, inputs, directory):
    """Saves `model` to `.keras`, reloads with `safe_mode=True`, compares."""
    path = os.path.join(str(directory), "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    expected = to_numpy(model(inputs))
    actual = to_numpy(loaded(inputs))
    if isinstance(expected, dict):
        for key in expected:
            np.testing.assert_allclose(actual[key], expected[key], atol=1e-6)
    elif isinstance(expected, (tuple, list)):
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, atol=1e-6)
    else:
        np.testing.assert_allclose(actual, expected, atol=1e-6)
    return loaded


def np_softmax(x, axis=-1):
    """Max-subtracted softmax: the NumPy reference used across tests."""
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
