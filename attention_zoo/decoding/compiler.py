"""The active backend's compiler: the one place `decoding/` names a backend.

`layers/`, `blocks/` and `decoding/` use only Keras, so the same code runs
on TensorFlow and JAX. Compiling a whole search is the exception: Keras has
no backend-neutral `jit`, so `compile_function` imports the backend's
compiler lazily, inside the function (as `jit` of
`tests/support/layer_checks.py` does); importing `attention_zoo.decoding`
never imports TensorFlow or JAX.
"""

import functools

import keras


def compile_function(fn, jit_compile=True):
    """`fn` compiled with the active Keras backend's compiler.

    - TensorFlow: `tf.function(fn, jit_compile=jit_compile,
      autograph=False)`: a graph function, compiled whole with XLA when
      `jit_compile`. No AutoGraph: the searches' loops are
      `ops.while_loop`s already.
    - JAX: `jax.jit(fn)` when `jit_compile` (JAX compiles with XLA), else
      `fn` itself (op by op).
    - Other backends: `fn` itself.

    Each call of the result with new input shapes traces (and compiles)
    again: give it inputs of a few fixed shapes (see `buckets`), or, as
    `decode` does, compile one function per shape.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        # lazy: the backend's own package: a JAX process loads no TensorFlow
        import tensorflow as tf

        # TensorFlow's "N out of the last M calls ... triggered tf.function
        # retracing" warning counts traces per code object, across every
        # tf.function of closures made by the same `def`. A partial has no
        # code object, so the count is kept per compiled function, and
        # each search, traced once for its bucket, is counted on its own.
        fn = functools.partial(fn)
        return tf.function(fn, jit_compile=bool(jit_compile), autograph=False)
    if backend == "jax" and jit_compile:
        import jax  # lazy: as `tensorflow` above

        return jax.jit(fn)
    return fn
