"""The EfficientNet-Lite0 network in Keras, laid out for PyTorch weights.

EfficientNet-Lite0 (Tan & Le, 2019; the "lite" variants of
tensorflow/tpu `models/official/efficientnet/lite`) is EfficientNet-B0
made friendly to quantised mobile inference:

- the same seven stages of inverted-residual ("MBConv") blocks:
  `1x1 expand (x6) -> BN -> ReLU6 -> kxk depthwise -> BN -> ReLU6 ->
  1x1 project -> BN`, plus the input when the block keeps stride 1 and
  width (no activation after the projection);
- no squeeze-and-excitation, ReLU6 instead of swish, and the 32-channel
  stem and 1280-channel head are not scaled;
- TensorFlow "same" padding: a strided convolution pads
  `max((ceil(n / s) - 1) * s + k - n, 0)` in total, the odd pixel at the
  bottom / right. Keras's `padding="same"` is exactly that, for any
  input size (the PyTorch port computes the same padding once, for 224);
- BatchNorm with `epsilon=1e-3` (TensorFlow's, kept by the PyTorch port).

Layers are named after the PyTorch state dict of the lukemelas-style
`efficientnet_lite_pytorch` port (`_blocks.3._depthwise_conv` is the layer
`block3_depthwise_conv`); `torch_key_prefix` maps one to the other, so
`attention_zoo_apps.captioning.encoders` can load those weights key for key.
"""

import keras

STEM_FILTERS = 32
HEAD_FILTERS = 1280
NUM_CLASSES = 1000
# The stage table of EfficientNet-B0 (Lite0 uses it unscaled):
# (repeats, kernel_size, first stride, expand_ratio, output filters).
STAGES = (
    (1, 3, 1, 1, 16),  # 112 x 112 at 224 px
    (2, 3, 2, 6, 24),  # 56 x 56
    (2, 5, 2, 6, 40),  # 28 x 28
    (3, 3, 2, 6, 80),  # 14 x 14
    (3, 5, 1, 6, 112),  # 14 x 14
    (4, 5, 2, 6, 192),  # 7 x 7
    (1, 3, 1, 6, 320),  # 7 x 7
)
# The ImageNet model's input normalisation, on 0-255 pixels:
# (x / 255 - MEAN) / STD, i.e. about (x - 127) / 128.
PIXEL_MEAN = 0.498
PIXEL_STD = 0.502
BATCH_NORM_EPSILON = 1e-3
BATCH_NORM_MOMENTUM = 0.99
DROPOUT = 0.2


def stage_output_names():
    """The name of the layer ending each stage, `1..7`: the output of
    its last block (`"block10_add"` for stage 5)."""
    names = []
    block = 0
    for repeats, *_ in STAGES:
        block += repeats
        last = block - 1
        # A longer stage ends in a block that keeps stride and width, so
        # in its residual add; a one-block stage changes width (no add).
        names.append(
            f"block{last}_add" if repeats > 1 else f"block{last}_project_bn"
        )
    return names


def build_efficientnet_lite0(
    include_top=False, input_shape=(None, None, 3), name="efficientnet_lite0"
):
    """EfficientNet-Lite0 with random weights.

    Args:
        include_top: bool; `True` adds global average pooling, dropout and
            the 1000-class softmax (`"predictions"`, float32). Defaults to
            `False`: the output is the head's feature map.
        input_shape: tuple `(H, W, 3)`, `None` for any size. Defaults to
            `(None, None, 3)`.
        name: str, the model name. Defaults to `"efficientnet_lite0"`.

    Returns:
        A functional `keras.Model` taking `(B, H, W, 3)` RGB values in
        `[0, 255]` and returning the feature map
        `(B, ceil(H / 32), ceil(W / 32), 1280)` after the head's
        convolution, BN and ReLU6 (`(B, 7, 7, 1280)` at 224 px), or with
        `include_top` the class probabilities `(B, 1000)`.
    """
    images = keras.Input(input_shape, name="image")
    # (x / 255 - MEAN) / STD as one multiply-add; a built-in, serialisable
    # layer that casts its input (uint8 too) to the compute dtype.
    x = keras.layers.Rescaling(
        1.0 / (255.0 * PIXEL_STD),
        offset=-PIXEL_MEAN / PIXEL_STD,
        name="rescaling",
    )(images)
    x = _conv_bn(x, STEM_FILTERS, 3, 2, "stem", activation=True)
    block = 0
    filters_in = STEM_FILTERS
    for repeats, kernel_size, stride, expand_ratio, filters in STAGES:
        for repeat in range(repeats):
            x = _mbconv_block(
                x,
                filters_in,
                filters,
                kernel_size,
                stride if repeat == 0 else 1,
                expand_ratio,
                f"block{block}",
            )
            filters_in = filters
            block += 1
    x = _conv_bn(x, HEAD_FILTERS, 1, 1, "head", activation=True)
    if include_top:
        x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
        x = keras.layers.Dropout(DROPOUT, name="top_dropout")(x)
        # float32 under mixed precision: the softmax and the scores.
        x = keras.layers.Dense(
            NUM_CLASSES,
            activation="softmax",
            dtype="float32",
            name="predictions",
        )(x)
    return keras.Model(images, x, name=name)


def _conv_bn(x, filters, kernel_size, strides, prefix, activation):
    """Conv (no bias) -> BN (-> ReLU6): `(B, H, W, C)` ->
    `(B, ceil(H / strides), ceil(W / strides), filters)`."""
    x = keras.layers.Conv2D(
        filters,
        kernel_size,
        strides=strides,
        padding="same",
        use_bias=False,
        name=f"{prefix}_conv",
    )(x)
    x = _batch_norm(x, f"{prefix}_bn")
    if activation:
        x = keras.layers.ReLU(max_value=6.0, name=f"{prefix}_relu6")(x)
    return x


def _batch_norm(x, name):
    return keras.layers.BatchNormalization(
        epsilon=BATCH_NORM_EPSILON, momentum=BATCH_NORM_MOMENTUM, name=name
    )(x)


def _mbconv_block(
    inputs, filters_in, filters, kernel_size, strides, expand_ratio, prefix
):
    """One inverted-residual block without squeeze-and-excitation:
    `(B, H, W, filters_in)` -> `(B, H / strides, W / strides, filters)`."""
    x = inputs
    if expand_ratio != 1:
        x = _conv_bn(
            x, filters_in * expand_ratio, 1, 1, f"{prefix}_expand", True
        )
    x = keras.layers.DepthwiseConv2D(
        kernel_size,
        strides=strides,
        padding="same",
        use_bias=False,
        name=f"{prefix}_depthwise_conv",
    )(x)
    x = _batch_norm(x, f"{prefix}_depthwise_bn")
    x = keras.layers.ReLU(max_value=6.0, name=f"{prefix}_depthwise_relu6")(x)
    x = keras.layers.Conv2D(
        filters, 1, use_bias=False, name=f"{prefix}_project_conv"
    )(x)
    x = _batch_norm(x, f"{prefix}_project_bn")
    if strides == 1 and filters_in == filters:
        x = keras.layers.Add(name=f"{prefix}_add")([x, inputs])
    return x


# Our layer names -> the PyTorch state dict's module names.
_TOP_LEVEL = {
    "stem_conv": "_conv_stem",
    "stem_bn": "_bn0",
    "head_conv": "_conv_head",
    "head_bn": "_bn1",
    "predictions": "_fc",
}
_IN_BLOCK = {
    "expand_conv": "_expand_conv",
    "expand_bn": "_bn0",
    "depthwise_conv": "_depthwise_conv",
    "depthwise_bn": "_bn1",
    "project_conv": "_project_conv",
    "project_bn": "_bn2",
}


def torch_key_prefix(layer_name):
    """The PyTorch module name of one of our layers with weights
    (`"block3_depthwise_bn"` -> `"_blocks.3._bn1"`), or `None`."""
    if layer_name in _TOP_LEVEL:
        return _TOP_LEVEL[layer_name]
    block, _, role = layer_name.partition("_")
    if block.startswith("block") and block[5:].isdigit() and role in _IN_BLOCK:
        return f"_blocks.{int(block[5:])}.{_IN_BLOCK[role]}"
    return None


# Per layer type: the PyTorch suffixes it takes, and their conversion to
# the Keras weights in `layer.weights` order.
_TORCH_LAYOUTS = (
    (
        keras.layers.DepthwiseConv2D,
        ("weight",),
        lambda weight: [weight.transpose(2, 3, 0, 1)],  # (C, 1, kh, kw)
    ),
    (
        keras.layers.Conv2D,
        ("weight",),
        lambda weight: [weight.transpose(2, 3, 1, 0)],  # (out, in, kh, kw)
    ),
    (
        keras.layers.BatchNormalization,
        ("weight", "bias", "running_mean", "running_var"),
        lambda gamma, beta, mean, variance: [gamma, beta, mean, variance],
    ),
    (
        keras.layers.Dense,
        ("weight", "bias"),
        lambda weight, bias: [weight.T, bias],  # (out, in)
    ),
)


def torch_suffixes(layer):
    """The PyTorch state-dict suffixes `layer`'s weights come from
    (`("weight",)` for a convolution)."""
    return _torch_layout(layer)[0]


def torch_arrays_to_keras(layer, arrays):
    """Converts one layer's PyTorch arrays to its Keras weights.

    Args:
        layer: a `Conv2D`, `DepthwiseConv2D`, `BatchNormalization` or
            `Dense` layer of `build_efficientnet_lite0`.
        arrays: dict, the layer's PyTorch arrays by suffix (`"weight"`,
            `"bias"`, `"running_mean"`, `"running_var"`).

    Returns:
        The list of arrays for `layer.set_weights`, in its order.
    """
    suffixes, convert = _torch_layout(layer)
    return convert(*(arrays[suffix] for suffix in suffixes))


def _torch_layout(layer):
    for cls, suffixes, convert in _TORCH_LAYOUTS:
        if isinstance(layer, cls):
            return suffixes, convert
    raise TypeError(f"No PyTorch weights for layer {layer.name!r}.")
