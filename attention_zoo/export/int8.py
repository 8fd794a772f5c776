"""int8 exports: the large `Dense` layers of a model as oneDNN int8 matmuls.

`int8_dense_layers(model)` is a context manager: while it is open, each
plain `keras.layers.Dense` of `model` whose kernel has at least
`MIN_KERNEL_SIZE` entries computes its matmul with
`tf.raw_ops.QuantizedMatMulWithBiasAndDequantize`, which TensorFlow's
oneDNN build runs on the CPU's int8 dot-product instructions (AVX-512 VNNI
or AMX; `ONEDNN_VERBOSE=1` shows `brgemm:avx512_core_vnni`). Functions
traced inside the context (the serving functions of an export being
saved) keep that graph; the layers compute in float32 again afterwards.

The arithmetic, for inputs `x` `(M, K)` and kernel `W` `(K, N)`:

- `W` is quantized once, symmetrically per output column:
  `Wq[:, n] = round(W[:, n] / s[n])` clipped to [-127, 127],
  `s[n] = max_k |W[k, n]| / 127`, stored in the graph as an int8 constant
  (a quarter of the float32 bytes).
- `x` is quantized at each call, per tensor, as unsigned 8-bit after a
  shift: `lo = min(min(x), 0)`, `x - lo` in [0, max(x) - lo] to quint8
  ("SCALED" mode; oneDNN's int8 matmul takes unsigned activations).
- The op (told that `Wq` spans [-127, 127], scale 1) returns
  `(x - lo) @ Wq + c` in float32, given the per-call bias
  `c = lo * sum_k Wq[k, :] + b / s`; times `s`, that is `x @ W + b` up to
  rounding. (The op takes one weight range per tensor: the per-column
  scales are applied after it, which halves the error of one scale per
  tensor at the same speed; folding the shift and the bias into the op's
  bias leaves that one multiply after it.)

Small layers stay float32: quantizing the activations costs about what the
int8 matmul saves there. Measured on a 2-core AVX-512 VNNI Xeon, inside a
graph-mode loop: a `(256, 768)` kernel ran at 0.9x float32 on 32 rows and
0.4x on one row; a `(256, 4465)` kernel at 2.7x and 1.6x. The op has no XLA
kernel: an int8 export is not XLA-compiled.

The op runs only where TensorFlow's oneDNN kernels do int8 (AVX-512 CPUs:
VNNI or AMX); elsewhere (an AVX2-only CPU such as some AMD EPYCs) it
returns nothing. `int8_available()` tries it once per process, and an
int8 export, or a training run that asks for one, is refused there
(`Int8Unavailable`): an export made there would not run there either.
"""

import contextlib
import functools

import numpy as np

from attention_zoo.export.layer_calls import replaced_calls

# Kernels with fewer entries stay float32 (see the module docstring).
MIN_KERNEL_SIZE = 2**19


def quantize_kernel(kernel):
    """A float kernel `(K, N)` -> `(int8 kernel, scales)`, symmetric per
    column: `kernel ≈ int8 kernel * scales`, `scales[n] = max_k
    |kernel[k, n]| / 127` (1.0 for an all-zero column), float32 `(N,)`."""
    kernel = np.asarray(kernel, dtype=np.float32)
    largest = np.abs(kernel).max(axis=0)
    scales = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
    quantized = np.clip(np.round(kernel / scales), -127, 127).astype(np.int8)
    return quantized, scales


def int8_matmul(x, quantized, scales, bias=None):
    """`x @ (quantized * scales) + bias` with oneDNN's int8 matmul.

    Args:
        x: float32 tensor `(..., K)`.
        quantized: int8 NumPy array `(K, N)` (see `quantize_kernel`),
            embedded in the graph as a constant.
        scales: float32 NumPy array `(N,)`, the columns' scales.
        bias: optional float32 NumPy array `(N,)`.

    Returns:
        float32 tensor `(..., N)`.
    """
    # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
    import tensorflow as tf

    depth, units = quantized.shape
    column_sums = quantized.astype(np.float32).sum(axis=0)
    scales = np.asarray(scales, np.float32)
    scaled_bias = np.zeros(units, np.float32)
    if bias is not None:
        scaled_bias = np.asarray(bias, np.float32) / scales
    flat = tf.reshape(tf.cast(x, tf.float32), [-1, depth])
    # The shift makes the activations non-negative (quint8); an empty
    # batch shifts by 0 and quantizes over a tiny range.
    low = tf.minimum(tf.reduce_min(flat), 0.0)
    shifted = flat - low
    high = tf.maximum(tf.reduce_max(shifted), 1e-6)
    activations, low_a, high_a = tf.raw_ops.QuantizeV2(
        input=shifted, min_range=0.0, max_range=high, T=tf.quint8, mode="SCALED"
    )
    product = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
        a=activations,
        b=tf.constant(quantized, dtype=tf.qint8),
        bias=low * tf.constant(column_sums) + tf.constant(scaled_bias),
        min_a=low_a,
        max_a=high_a,
        min_b=-127.0,
        max_b=127.0,
        min_freezed_output=0.0,
        max_freezed_output=0.0,
        Toutput=tf.float32,
        input_quant_mode="SCALED",
    )
    product = product * tf.constant(scales)
    shape = tf.concat([tf.shape(x)[:-1], [units]], axis=0)
    return tf.reshape(product, shape)


def int8_candidates(model, min_kernel_size=None):
    """The plain `Dense` layers of `model` (nested ones included) whose
    kernels have at least `min_kernel_size` entries (None:
    `MIN_KERNEL_SIZE`), in layer order."""
    # lazy: importing attention_zoo.export imports no Keras (JAX export)
    import keras

    if min_kernel_size is None:
        min_kernel_size = MIN_KERNEL_SIZE
    found = []
    for layer in _layers(model):
        if type(layer) is not keras.layers.Dense or layer.lora_enabled:
            continue
        if int(np.prod(layer.kernel.shape)) >= min_kernel_size:
            found.append(layer)
    return found


class Int8Unavailable(ValueError):
    """This process's TensorFlow cannot run oneDNN's int8 matmul on this
    CPU, so an int8 export would not run here."""


@functools.cache
def int8_available():
    """Whether `int8_matmul` runs on this CPU: a `(2, 4) @ (4, 3)` product
    in a `tf.function`, checked against float32 (once per process)."""
    # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
    import tensorflow as tf

    kernel = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    quantized, scales = quantize_kernel(kernel)
    inputs = np.linspace(-2.0, 1.0, 8, dtype=np.float32).reshape(2, 4)
    product = tf.function(lambda x: int8_matmul(x, quantized, scales))
    try:
        found = product(tf.constant(inputs)).numpy()
    except tf.errors.OpError:
        return False
    expected = inputs @ (quantized * scales)
    return found.shape == expected.shape and np.allclose(
        found, expected, atol=0.1
    )


def check_int8_available():
    """An `Int8Unavailable` naming the reason unless `int8_available()`."""
    if not int8_available():
        raise Int8Unavailable(
            "TensorFlow cannot run oneDNN's int8 matmul on this CPU (it "
            "needs AVX-512 VNNI or AMX): an int8 export made here would not "
            "run here; export float32"
        )


class NothingToQuantize(ValueError):
    """A model with no layer an int8 export would quantize: its "int8"
    export would compute in float32 while saying int8."""


def check_int8_candidates(model, min_kernel_size=None):
    """`int8_candidates(model, min_kernel_size)`, or `NothingToQuantize`
    naming the model and the size when there are none (a training
    command checks this before its first epoch)."""
    layers = int8_candidates(model, min_kernel_size)
    if not layers:
        raise NothingToQuantize(
            f"{model.name} has no Dense layer with "
            f"{min_kernel_size or MIN_KERNEL_SIZE:,} or more kernel entries "
            "(int8 pays off on large layers only): an int8 export would "
            "compute in float32"
        )
    return layers


@contextlib.contextmanager
def int8_dense_layers(model, min_kernel_size=None):
    """Within the context, the large `Dense` layers of `model` (see
    `int8_candidates`) compute with `int8_matmul` on their current
    weights; yields their names. Afterwards they are float32 again
    (functions traced inside keep their int8 graphs).

    Raises:
        NothingToQuantize: `model` has no layer that large
            (`check_int8_candidates`).
        Int8Unavailable: this CPU cannot run the int8 op.
    """
    layers = check_int8_candidates(model, min_kernel_size)
    check_int8_available()
    with replaced_calls([(layer, _int8_call(layer)) for layer in layers]):
        yield [layer.name for layer in layers]


def _int8_call(layer):
    """The int8 `call` of a `Dense` layer: its matmul, bias and
    activation, in its compute dtype."""
    # lazy: importing attention_zoo.export imports no Keras (JAX export)
    import keras

    quantized, scales = quantize_kernel(
        keras.ops.convert_to_numpy(layer.kernel)
    )
    bias = (
        None if layer.bias is None else keras.ops.convert_to_numpy(layer.bias)
    )
    activation = layer.activation
    dtype = layer.compute_dtype

    def call(inputs, training=None):
        # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
        import tensorflow as tf

        outputs = int8_matmul(inputs, quantized, scales, bias)
        return tf.cast(activation(outputs), dtype)

    return call


def _layers(model):
    """Every layer of `model`, the layers inside its layers included,
    each once."""
    return model._flatten_layers(include_self=False, recursive=True)


# What `precision` an export takes (`SavedBundle.export`).
EXPORT_PRECISIONS = ("float32", "int8")


def check_export_precision(precision, jit_compile):
    """A `ValueError` naming the value unless `precision` is one of
    `EXPORT_PRECISIONS` and, for `"int8"`, `jit_compile` is not True (the
    int8 op has no XLA kernel)."""
    if precision not in EXPORT_PRECISIONS:
        raise ValueError(
            f"precision {precision!r}: the export precisions are "
            f"{', '.join(EXPORT_PRECISIONS)}"
        )
    if precision == "int8" and jit_compile:
        raise ValueError(
            "precision 'int8' runs oneDNN's int8 matmul, which XLA cannot "
            "compile: export it with jit_compile off"
        )


@contextlib.contextmanager
def export_precision(model, precision):
    """`int8_dense_layers(model)` for `"int8"` (yields the int8 layers'
    names); nothing for `"float32"` (yields None)."""
    check_export_precision(precision, jit_compile=False)
    if precision == "float32":
        yield None
        return
    with int8_dense_layers(model) as names:
        yield names


def check_model_precision(model, precision):
    """`check_int8_candidates(model)` for `"int8"` (`NothingToQuantize`
    when `model` has no layer to quantize) and `check_int8_available`
    (`Int8Unavailable` on a CPU that cannot run the op); nothing for
    `"float32"`. `precision` itself is checked by
    `check_export_precision`."""
    if precision == "int8":
        check_int8_candidates(model)
        check_int8_available()
