"""`build_captioner`: a CNN encoder and the show-attend-tell decoder.

The encoder turns an image `(S, S, 3)` (float, values in `[0, 1]`) into a
feature map `(H, W, C)`, flattened to `L = H * W` annotation vectors: the
set the decoder attends over, one element per image region.

- `encoder="small_cnn"` (default): a compact CNN trained from scratch:
  blocks of two 3x3 convolutions (ReLU, batch norm) and a 2x2 max-pool,
  as many blocks as halve the image to `8 x 8` positions (3 for 64 px).
- `encoder="efficientnet_lite0"`: EfficientNet-Lite0
  (`attention_zoo_apps.captioning.encoders.efficientnet_lite0`) with
  `encoder_weights=None` (random), `"imagenet"` (its ImageNet weights, from
  the `[imagenet]` extra) or the path of its `.npz` / `.pth` state dict.
  `encoder_stage` picks the feature grid: `None`, the head
  (`7 x 7 x 1280` at 224 px), or the output of a stage (stage 5:
  `14 x 14 x 112`).
- `encoder="<keras.applications name>"` (`"ResNet50"`, `"MobileNetV2"`,
  `"EfficientNetB0"`, ...): that backbone without its classifier, with
  `encoder_weights=None` (random, the default; nothing is downloaded) or
  the path of a weights file the user supplies, its last feature map used;
  the `[0, 1]` input is rescaled to what the backbone expects (see
  `BackbonePreprocessing`).

`trainable_encoder=False` freezes the encoder, `True` trains it; `None`
(the default) freezes it when its weights are pretrained (`encoder_weights`
given) and trains it otherwise. `decoder_model(model)` is the part after a
frozen encoder, trained on features computed once (`Captioner` does so).
"""

import keras
from keras import ops

from attention_zoo.checks import check_positive_int
from attention_zoo_apps.captioning import encoders
from attention_zoo_apps.captioning.decoder import AttentionLSTMDecoder

SMALL_CNN = "small_cnn"
EFFICIENTNET_LITE0 = "efficientnet_lite0"
# keras.applications preprocessing modes (keras.applications.imagenet_utils)
# by backbone family; "none": the backbone takes 0-255 pixels and scales
# them itself.
_MODES = {
    "ResNet": "caffe",
    "VGG": "caffe",
    "ResNetV2": "tf",
    "MobileNet": "tf",
    "Inception": "tf",
    "Xception": "tf",
    "NASNet": "tf",
    "DenseNet": "torch",
    "EfficientNet": "none",
    "ConvNeXt": "none",
    "RegNet": "none",
}


def preprocessing_mode(encoder):
    """The pixel preprocessing a `keras.applications` backbone expects."""
    for prefix in sorted(_MODES, key=len, reverse=True):
        if encoder.startswith(prefix):
            return _MODES[prefix]
    return "tf"


@keras.saving.register_keras_serializable(
    package="captioning", name="BackbonePreprocessing"
)
class BackbonePreprocessing(keras.layers.Layer):
    """Maps `[0, 1]` RGB pixels to a `keras.applications` backbone's input.

    Modes as in `keras.applications.imagenet_utils.preprocess_input`:
    `"caffe"` (BGR, ImageNet means subtracted, 0-255 scale), `"tf"`
    (`[-1, 1]`), `"torch"` (ImageNet mean / std normalisation) and
    `"none"` (0-255, for backbones that scale inside).
    """

    def __init__(self, mode="tf", **kwargs):
        super().__init__(**kwargs)
        if mode not in ("caffe", "tf", "torch", "none"):
            raise ValueError(
                "`mode` must be 'caffe', 'tf', 'torch' or 'none'. "
                f"Received: mode={mode!r}"
            )
        self.mode = mode

    def call(self, images):
        images = ops.cast(images, self.compute_dtype)
        if self.mode == "tf":
            return images * 2.0 - 1.0
        if self.mode == "torch":
            mean = ops.convert_to_tensor([0.485, 0.456, 0.406], images.dtype)
            std = ops.convert_to_tensor([0.229, 0.224, 0.225], images.dtype)
            return (images - mean) / std
        images = images * 255.0
        if self.mode == "caffe":
            mean = ops.convert_to_tensor(
                [103.939, 116.779, 123.68], images.dtype
            )
            return ops.flip(images, axis=-1) - mean
        return images

    def compute_output_shape(self, images_shape):
        return tuple(images_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode})
        return config


def encoder_is_trainable(trainable_encoder, encoder_weights):
    """`trainable_encoder`, its `None` resolved: frozen when pretrained."""
    if trainable_encoder is None:
        return encoder_weights is None
    return bool(trainable_encoder)


def build_encoder(
    encoder=SMALL_CNN,
    image_size=64,
    encoder_weights=None,
    trainable_encoder=None,
    encoder_stage=None,
):
    """The image encoder: `(B, S, S, 3)` in `[0, 1]` -> `(B, H, W, C)`."""
    check_positive_int("image_size", image_size)
    if encoder_stage is not None and encoder != EFFICIENTNET_LITE0:
        raise ValueError(
            f"`encoder_stage` picks a stage of {EFFICIENTNET_LITE0}. "
            f"Received: encoder={encoder!r}, encoder_stage={encoder_stage}"
        )
    if encoder_weights is not None and encoder == SMALL_CNN:
        raise ValueError(
            "The small CNN is trained from scratch: `encoder_weights` is for "
            f"{EFFICIENTNET_LITE0} or a keras.applications encoder. "
            f"Received: encoder_weights={encoder_weights!r}"
        )
    trainable_encoder = encoder_is_trainable(trainable_encoder, encoder_weights)
    images = keras.Input((image_size, image_size, 3), name="image")
    if encoder == SMALL_CNN:
        if image_size < 16 or image_size & (image_size - 1):
            raise ValueError(
                "The small CNN halves the image down to 8 x 8 positions, so "
                "`image_size` must be a power of two of at least 16. "
                f"Received: image_size={image_size}"
            )
        x = images
        blocks = (image_size // 8).bit_length() - 1
        for block in range(blocks):
            filters = min(32 * 2**block, 256)
            for conv in range(2):
                x = keras.layers.Conv2D(
                    filters,
                    3,
                    padding="same",
                    use_bias=False,
                    name=f"block{block}_conv{conv}",
                )(x)
                x = keras.layers.BatchNormalization(
                    name=f"block{block}_norm{conv}"
                )(x)
                x = keras.layers.ReLU(name=f"block{block}_relu{conv}")(x)
            x = keras.layers.MaxPooling2D(name=f"block{block}_pool")(x)
        model = keras.Model(images, x, name=SMALL_CNN)
    elif encoder == EFFICIENTNET_LITE0:
        backbone = encoders.efficientnet_lite0(
            weights=encoder_weights,
            output_stage=encoder_stage,
            input_shape=(image_size, image_size, 3),
        )
        backbone.trainable = trainable_encoder
        # Lite0 takes 0-255 pixels and scales them itself.
        x = BackbonePreprocessing("none", name="preprocessing")(images)
        model = keras.Model(images, backbone(x), name=f"{encoder}_encoder")
    else:
        application = getattr(keras.applications, encoder, None)
        if application is None or not callable(application):
            raise ValueError(
                f"`encoder` must be 'small_cnn', '{EFFICIENTNET_LITE0}' or "
                "the name of a keras.applications model (e.g. 'ResNet50', "
                f"'MobileNetV2'). Received: encoder={encoder!r}"
            )
        if encoder_weights == "imagenet":
            raise ValueError(
                "Nothing is downloaded: a keras.applications encoder takes "
                "the path of a weights file; the ImageNet weights that come "
                f"with the package are {EFFICIENTNET_LITE0}'s. Received: "
                f"encoder={encoder!r}, encoder_weights='imagenet'"
            )
        backbone = application(
            include_top=False,
            weights=None,
            input_shape=(image_size, image_size, 3),
        )
        if encoder_weights is not None:
            backbone.load_weights(encoder_weights)
        backbone.trainable = trainable_encoder
        x = BackbonePreprocessing(
            preprocessing_mode(encoder), name="preprocessing"
        )(images)
        model = keras.Model(images, backbone(x), name=f"{encoder}_encoder")
    if encoder == SMALL_CNN:
        model.trainable = trainable_encoder
    return model


def build_captioner(
    vocabulary_size,
    encoder=SMALL_CNN,
    image_size=64,
    embedding_dim=256,
    units=512,
    attention="additive",
    dropout=0.3,
    attention_regularization=1.0,
    attention_query="state",
    prediction="deep",
    attention_mode="soft",
    hard_inference="argmax",
    reinforce_weight=0.1,
    entropy_weight=0.002,
    semi_sampling=0.0,
    encoder_weights=None,
    trainable_encoder=None,
    encoder_stage=None,
    name="captioner",
):
    """An image captioner with spatial attention (show, attend and tell).

    Args:
        vocabulary_size: int, number of word ids (0 is padding).
        encoder: `"small_cnn"`, `"efficientnet_lite0"` or a
            `keras.applications` model name (see the module docstring).
            Defaults to `"small_cnn"`.
        image_size: int, the square input size `S`. Defaults to `64`.
        embedding_dim: int. Defaults to `256`.
        units: int, LSTM width. Defaults to `512`.
        attention: `"additive"`, `"general"`, `"dot"`, `"scaled_dot"` or
            `None` (the mean-feature baseline). Defaults to `"additive"`.
        dropout: float in `[0, 1)`. Defaults to `0.3`.
        attention_regularization: `lambda` of the doubly stochastic
            attention penalty. Defaults to `1.0`.
        attention_query: `"state"` (the LSTM state alone, as in the paper)
            or `"state_and_word"` (the state plus the previous word): what
            the decoder looks at the image with (see
            `AttentionLSTMDecoder`). Defaults to `"state"`.
        prediction: `"deep"` (the paper's output from the soft context) or
            `"latent"` (each word a mixture over the positions looked at:
            heatmaps that point at what each word names; see
            `AttentionLSTMDecoder`). Defaults to `"deep"`.
        attention_mode: `"soft"` or `"hard"` (one position per word,
            sampled in training, learned by REINFORCE; see
            `AttentionLSTMDecoder`). Defaults to `"soft"`.
        hard_inference: `"argmax"` or `"expectation"`: what hard
            attention reads at inference. Defaults to `"argmax"`.
        reinforce_weight, entropy_weight: hard attention's `lambda_r` and
            `lambda_e`. Default to `0.1` and `0.002`.
        semi_sampling: float in `[0, 1]`, hard attention: the probability
            that an image reads the expectation in a training step (see
            `AttentionLSTMDecoder`). Defaults to `0.0`.
        encoder_weights: None, `"imagenet"` (`"efficientnet_lite0"`) or
            the path of a weights file for the encoder. Defaults to `None`.
        trainable_encoder: bool, or `None`: frozen when `encoder_weights`
            is given, else trained. Defaults to `None`.
        encoder_stage: `None` or the `"efficientnet_lite0"` stage whose
            output is the feature grid (see the module docstring).
            Defaults to `None`.
        name: model name.

    Returns:
        A `keras.Model` with inputs `{"image": (B, S, S, 3) float in [0, 1],
        "caption_in": (B, T) int32}` (START then the words, PAD = 0) and
        output the logits `(B, T, vocabulary_size)` (float32), masked where
        `caption_in` is padding. `attention_model(model)` also returns the
        weights `(B, T, H, W)`.
    """
    image_encoder = build_encoder(
        encoder, image_size, encoder_weights, trainable_encoder, encoder_stage
    )
    images = keras.Input((image_size, image_size, 3), name="image")
    caption_in = keras.Input((None,), dtype="int32", name="caption_in")
    feature_map = image_encoder(images)  # (B, H, W, C)
    height, width, channels = feature_map.shape[1:]
    features = keras.layers.Reshape(
        (height * width, channels), name="annotations"
    )(feature_map)
    decoder = AttentionLSTMDecoder(
        vocabulary_size,
        embedding_dim=embedding_dim,
        units=units,
        attention=attention,
        dropout=dropout,
        attention_regularization=attention_regularization,
        query=attention_query,
        prediction=prediction,
        attention_mode=attention_mode,
        hard_inference=hard_inference,
        reinforce_weight=reinforce_weight,
        entropy_weight=entropy_weight,
        semi_sampling=semi_sampling,
        name="decoder",
    )
    logits, _ = decoder(features, caption_in)
    # float32 under mixed precision too: the loss and the export see it.
    logits = CaptionMask(dtype="float32", name="logits")([logits, caption_in])
    return keras.Model(
        {"image": images, "caption_in": caption_in}, logits, name=name
    )


@keras.saving.register_keras_serializable(
    package="captioning", name="CaptionMask"
)
class CaptionMask(keras.layers.Layer):
    """Passes `[logits, caption_in]`'s logits through with the mask
    `caption_in != 0`, so Keras leaves padding out of losses and metrics."""

    def call(self, inputs):
        return inputs[0]

    def compute_mask(self, inputs, mask=None):
        return ops.not_equal(inputs[1], 0)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[0])


def encoder_model(model):
    """`model`'s image encoder, `(B, S, S, 3)` -> `(B, H, W, C)`."""
    return keras.Model(
        model.get_layer("image").output,
        model.get_layer("annotations").input,
        name=f"{model.name}_encoder",
    )


def decoder_model(model):
    """A model sharing `model`'s weights from the encoder's feature map
    on: inputs `{"features": (B, H, W, C), "caption_in"}`, the same logits.

    With a frozen encoder, training it on features computed once
    (`encoder_model(model).predict(images)`) trains `model`: their
    trainable variables are the same, in the same order."""
    annotations = model.get_layer("annotations")
    features = keras.Input(annotations.input.shape[1:], name="features")
    caption_in = keras.Input((None,), dtype="int32", name="caption_in")
    logits, _ = model.get_layer("decoder")(annotations(features), caption_in)
    logits = model.get_layer("logits")([logits, caption_in])
    return keras.Model(
        {"features": features, "caption_in": caption_in},
        logits,
        name=f"{model.name}_decoder",
    )


def attention_model(model):
    """A model sharing `model`'s weights with outputs `{"logits",
    "attention"}`, the attention weights reshaped to `(B, T, H, W)`."""
    height, width = model.get_layer("annotations").input.shape[1:3]
    weights = model.get_layer("decoder").output[1]  # (B, T, H * W)
    weights = keras.layers.Reshape((-1, height, width), name="attention")(
        weights
    )
    return keras.Model(
        model.inputs,
        {"logits": model.output, "attention": weights},
        name=f"{model.name}_with_attention",
    )
