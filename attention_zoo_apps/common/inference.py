"""`compiled_call`: a model's inference call, compiled on any backend.

The applications predict with a model compiled whole by XLA, fed the
tensors their tokenizers make (TensorFlow's, on any backend: tokenizing
is `tf.text`). On TensorFlow that is `tf.function(jit_compile=...)`. On
JAX it is `jax.jit` of `model.stateless_call`, given the variables' values
at every call, so that one compiled function stays right while training
changes the weights (a `jax.jit` closing over the model would compile
them in as constants); its inputs may be TensorFlow or NumPy tensors and
its outputs come back as TensorFlow tensors, so the code around it is the
same on both backends.
"""

import functools

import keras
import numpy as np
import tensorflow as tf


def compiled_call(model, jit_compile=True):
    """`inputs -> model(inputs, training=False)`, compiled with XLA when
    `jit_compile`, returning TensorFlow tensors (in the model's output
    structure) on every backend."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        # A partial, not a lambda: TensorFlow counts the traces of every
        # tf.function of one code object together and warns of
        # "retracing" when a model is compiled anew after each `fit`; a
        # partial has no code object, so each compiled call counts alone
        # (as `attention_zoo.decoding.compiler` does).
        return tf.function(
            functools.partial(_inference_call, model),
            jit_compile=bool(jit_compile),
            autograph=False,
        )
    if backend != "jax":
        raise NotImplementedError(
            f"The applications run on the TensorFlow and JAX backends, not "
            f"{backend!r}: set KERAS_BACKEND=tensorflow or jax."
        )
    import jax  # lazy: jax is installed for KERAS_BACKEND=jax only

    def call(trainable, non_trainable, inputs):
        outputs, _ = model.stateless_call(
            trainable, non_trainable, inputs, training=False
        )
        return outputs

    run = jax.jit(call) if jit_compile else call

    def predict(inputs):
        inputs = tf.nest.map_structure(np.asarray, inputs)
        outputs = run(
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            inputs,
        )
        return tf.nest.map_structure(
            lambda x: tf.convert_to_tensor(np.asarray(x)), outputs
        )

    return predict


def _inference_call(model, inputs):
    return model(inputs, training=False)
