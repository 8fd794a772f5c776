"""Intra-sentence attention with a learned bias per relative distance."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_positive_int
from attention_zoo.layers.key_network import apply_key_network
from attention_zoo.layers.key_network import build_key_network
from attention_zoo.layers.key_network import check_key_network
from attention_zoo.layers.masked_softmax import masked_softmax
from attention_zoo.layers.masked_softmax import zero_masked_queries


@attention_zoo_export(
    ("attention_zoo.IntraAttention", "attention_zoo.layers.IntraAttention")
)
class IntraAttention(keras.layers.Layer):
    """Self-attention of a sentence to itself with distance-sensitive biases.

    `f_ij = F(a_i)^T F(a_j) + d[clip(i - j, -D, D)]` and the output is
    `a'_i = sum_j softmax_j(f_ij) a_j`, where `F` is a feed-forward network
    (`key_units`; the paper's `F_intra`) or the identity, and `d` holds
    one learned scalar per signed distance, all distances beyond
    `D = max_distance` sharing the bias of `D` (or `-D`). The model then
    reads `[a_i, a'_i]`, which lets each word see the phrase around it.

    Letters: `B` batch, `T` time, `d` width.

    Masking: masked positions get zero weight; masked rows of the output
    and of the weights are zero; a fully masked sentence gives zeros. The
    input's Keras mask is used automatically and carried by the output.
    The softmax runs in float32 under mixed precision.

    Args:
        max_distance: int, the largest distance with a bias of its own.
            Defaults to `10` (as in the paper).
        key_units: None, or a sequence of ints: the widths of the layers of
            `F` (each a Dense layer with `activation`, after dropout).
            Defaults to `None` (score the inputs directly).
        activation: activation of `F`'s layers. Defaults to `"relu"`.
        dropout: float in `[0, 1)`, dropout before each layer of `F` in
            training. Defaults to `0.0`.
        seed: optional int, the dropout seed. Defaults to `None`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, T, d)`, the words `a`.
        mask: optional bool `(B, T)`, True = keep.
        return_attention_scores: bool, also return the weights `(B, T, T)`.
            Defaults to `False`.
        training: bool, dropout in `F` is applied only in training.

    Returns:
        `(B, T, d)`, and with `return_attention_scores=True` a tuple
        `(outputs, weights)`.

    Example:

    ```python
    words = keras.Input((None, 32))
    phrase = IntraAttention(key_units=(64, 64))(words)  # (B, T, 32)
    words_in_context = keras.layers.Concatenate()([words, phrase])
    ```

    Reference:
        Parikh et al., "A Decomposable Attention Model for Natural Language
        Inference", EMNLP 2016, https://aclanthology.org/D16-1244
        (Section 3.4).
    """

    def __init__(
        self,
        max_distance=10,
        key_units=None,
        activation="relu",
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("max_distance", max_distance)
        self.max_distance = max_distance
        self.key_units = check_key_network(key_units, dropout)
        self.activation = keras.activations.get(activation)
        self.dropout = dropout
        self.seed = seed
        self.supports_masking = True

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                "IntraAttention expects inputs of shape (B, T, d). "
                f"Received: inputs_shape={tuple(inputs_shape)}"
            )
        self.key_network = build_key_network(
            self,
            inputs_shape[-1],
            self.key_units,
            self.activation,
            self.dropout,
            self.seed,
        )
        self.distance_bias = self.add_weight(
            name="distance_bias",
            shape=(2 * self.max_distance + 1,),
            initializer="zeros",
        )

    def call(
        self,
        inputs,
        mask=None,
        return_attention_scores=False,
        training=None,
    ):
        key = apply_key_network(self.key_network, inputs, training)
        scores = ops.matmul(key, ops.swapaxes(key, -1, -2))  # (B, T, T)
        length = ops.shape(inputs)[1]
        position = ops.arange(length)
        distance = ops.expand_dims(position, 1) - ops.expand_dims(position, 0)
        distance = ops.clip(distance, -self.max_distance, self.max_distance)
        bias = ops.take(self.distance_bias, distance + self.max_distance)
        scores = scores + ops.cast(bias, scores.dtype)  # (T, T) broadcast
        keep = None if mask is None else ops.expand_dims(mask, 1)
        weights = ops.cast(masked_softmax(scores, keep), inputs.dtype)
        weights = zero_masked_queries(weights, mask)
        outputs = ops.matmul(weights, inputs)
        if return_attention_scores:
            return outputs, weights
        return outputs

    def compute_mask(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        if return_attention_scores:
            return [mask, None]
        return mask

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        outputs = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return outputs
        batch, length = inputs.shape[0], inputs.shape[1]
        weights = keras.KerasTensor(
            (batch, length, length), dtype=self.compute_dtype
        )
        return outputs, weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_distance": self.max_distance,
                "key_units": self.key_units,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "seed": self.seed,
            }
        )
        return config
