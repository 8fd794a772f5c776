"""Exports with each convolution's batch normalization folded into it.

At inference a `BatchNormalization` after a convolution is an affine map
per channel, `gamma * (y - mean) / sqrt(variance + epsilon) + beta`, so
it can be computed by the convolution itself: with `s = gamma /
sqrt(variance + epsilon)`, the kernel's output channel `c` times `s[c]`
and the bias `(b - mean) * s + beta` give the same result up to
rounding (`fold_batch_norm`).

Keras computes the normalization as separate element-wise ops over the
whole feature map; folded, each convolution is one oneDNN convolution
with its bias (and the ReLU6 after it) fused in by TensorFlow's graph
optimizer, as `ONEDNN_VERBOSE=1` shows (with a bias of zeros, as in a
freshly initialized model, nothing fused). The shipped captioner
(EfficientNet-Lite0 encoder) served the same captions 1.21x (one image a
call) and 1.34x (32) as fast in graph mode on a 2-core AVX-512 Xeon, and
2.07x and 1.62x with its beam search XLA-compiled
(`benchmarks.captioning_export_bench`).

`folded_batch_norms(model)` is a context manager: while it is open, each
`Conv2D` or `DepthwiseConv2D` of `model` whose output goes only to a
`BatchNormalization` over its channels (`fold_candidates`) computes the
folded convolution from the current weights, and the normalization
passes its input through. Functions traced inside (the serving functions
of an export being saved) keep that graph; the layers compute as before
afterwards. The rounding differs from the unfolded graph's, so an
export folds only when asked (`SavedBundle.export(...,
fold_batch_norms=True)`).
"""

import contextlib

import numpy as np

from attention_zoo.export.layer_calls import replaced_calls


def fold_batch_norm(
    kernel, bias, gamma, beta, mean, variance, epsilon, depthwise=False
):
    """A convolution's `(kernel, bias)` with the batch normalization
    after it folded in.

    Args:
        kernel: float array, a `Conv2D` kernel `(kh, kw, in, out)` or a
            `DepthwiseConv2D` kernel `(kh, kw, in, multiplier)` (output
            channel `i * multiplier + m`).
        bias: float array `(out,)`, or None (no bias).
        gamma, beta: float arrays `(out,)`, or None (`scale` or `center`
            off: 1 and 0).
        mean, variance: float arrays `(out,)`, the moving statistics.
        epsilon: float.
        depthwise: bool, whether `kernel` is a depthwise kernel.

    Returns:
        float32 NumPy arrays `(kernel, bias)`, the kernel of `kernel`'s
        shape and the bias `(out,)`.
    """
    kernel = np.asarray(kernel, np.float64)
    mean = np.asarray(mean, np.float64)
    scale = 1.0 / np.sqrt(np.asarray(variance, np.float64) + epsilon)
    if gamma is not None:
        scale = scale * np.asarray(gamma, np.float64)
    if depthwise:
        kernel = kernel * scale.reshape(kernel.shape[2:])
    else:
        kernel = kernel * scale
    folded_bias = -mean * scale
    if bias is not None:
        folded_bias = folded_bias + np.asarray(bias, np.float64) * scale
    if beta is not None:
        folded_bias = folded_bias + np.asarray(beta, np.float64)
    return kernel.astype(np.float32), folded_bias.astype(np.float32)


def fold_candidates(model):
    """The `(convolution, normalization)` pairs of `model` (nested models
    included) that fold: a `Conv2D` (one group) or `DepthwiseConv2D`,
    channels last, called once, with no activation, whose output goes
    only to a `BatchNormalization` over the last axis, called once."""
    # lazy: importing attention_zoo.export imports no Keras (JAX export)
    import keras

    convolutions = (keras.layers.Conv2D, keras.layers.DepthwiseConv2D)
    pairs = []
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if type(layer) not in convolutions or not _foldable(layer):
            continue
        consumers = [node.operation for node in layer._outbound_nodes]
        if len(consumers) != 1:
            continue
        (norm,) = consumers
        if (
            type(norm) is keras.layers.BatchNormalization
            and len(norm._inbound_nodes) == 1
            and norm.axis in (-1, 3)  # a 4-D feature map's channels
            and not norm.renorm
        ):
            pairs.append((layer, norm))
    return pairs


def _foldable(convolution):
    """Whether a convolution computes `conv(x, kernel) (+ bias)` on
    channels-last inputs, called in one place."""
    # lazy: importing attention_zoo.export imports no Keras (JAX export)
    import keras

    return (
        convolution.data_format == "channels_last"
        and convolution.activation is keras.activations.linear
        and getattr(convolution, "groups", 1) == 1
        and len(convolution._inbound_nodes) == 1
        and not getattr(convolution, "lora_enabled", False)
    )


@contextlib.contextmanager
def folded_batch_norms(model):
    """Within the context, each pair of `fold_candidates(model)` computes
    the folded convolution (`fold_batch_norm` of the current weights) and
    its normalization passes its input through; yields the
    normalizations' names. Afterwards both compute as before (functions
    traced inside keep their folded graphs)."""
    pairs = fold_candidates(model)
    replacements = []
    for convolution, norm in pairs:
        replacements.append((convolution, _folded_call(convolution, norm)))
        replacements.append((norm, _pass_through(norm)))
    with replaced_calls(replacements):
        yield [norm.name for _, norm in pairs]


def _folded_call(convolution, norm):
    """The `call` of `convolution` with `norm` folded in, in the
    normalization's output dtype."""
    # lazy: importing attention_zoo.export imports no Keras (JAX export)
    import keras

    depthwise = isinstance(convolution, keras.layers.DepthwiseConv2D)
    weights = [
        None if w is None else keras.ops.convert_to_numpy(w)
        for w in (
            convolution.kernel,
            convolution.bias,
            norm.gamma,
            norm.beta,
            norm.moving_mean,
            norm.moving_variance,
        )
    ]
    kernel, bias = fold_batch_norm(
        *weights, epsilon=norm.epsilon, depthwise=depthwise
    )
    strides = (1, *convolution.strides, 1)
    padding = convolution.padding.upper()
    dilations = tuple(convolution.dilation_rate)
    compute_dtype = convolution.compute_dtype
    output_dtype = norm.compute_dtype

    def call(inputs, training=None):
        # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
        import tensorflow as tf

        inputs = tf.cast(inputs, compute_dtype)
        weights = tf.constant(kernel, dtype=compute_dtype)
        if depthwise:
            outputs = tf.nn.depthwise_conv2d(
                inputs, weights, strides, padding, dilations=dilations
            )
        else:
            outputs = tf.nn.conv2d(
                inputs, weights, strides, padding, dilations=dilations
            )
        outputs = tf.nn.bias_add(outputs, tf.constant(bias, compute_dtype))
        return tf.cast(outputs, output_dtype)

    return call


def _pass_through(norm):
    """A normalization's `call` that returns its input (folded into the
    convolution before it), in the normalization's output dtype."""
    output_dtype = norm.compute_dtype

    def call(inputs, training=None, mask=None):
        # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
        import tensorflow as tf

        return tf.cast(inputs, output_dtype)

    return call
