"""Attention pooling: a sequence to one vector, with a learned query."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo.layers.masked_softmax import masked_softmax


@attention_zoo_export(
    ("attention_zoo.AttentionPooling", "attention_zoo.layers.AttentionPooling")
)
class AttentionPooling(keras.layers.Layer):
    """Seq2vec attention pooling with a learned context vector `u`.

    For each step `h_t` of the input, `score_t = u^T tanh(W h_t + b)`; the
    weights are `a = softmax(score)` over time and the output is
    `sum_t a_t h_t`. The learned `u` plays the role of a fixed query ("which
    steps are informative?").

    Letters: `B` batch, `T` time, `d` input width.

    Masking: steps where `mask` is False get weight exactly 0; a fully
    masked sequence gives a zero output and zero weights (never NaN). The
    Keras mask of the input (e.g. from `Embedding(mask_zero=True)`) is used
    automatically. The output has no time axis, so it carries no mask.

    Args:
        units: int, width of the hidden projection `W h + b`.
        dropout: float in `[0, 1)`, dropout on the weights in training.
            Defaults to `0.0`.
        seed: optional int, the dropout seed. Defaults to `None`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, T, d)`.
        mask: optional bool `(B, T)`, True = keep.
        return_attention_scores: bool, also return the weights `(B, T)`.
            Defaults to `False`.
        training: bool, dropout is applied only in training.

    Returns:
        The pooled `(B, d)`, and with `return_attention_scores=True` a tuple
        `(pooled, weights)` with weights `(B, T)` (before dropout).

    Example:

    ```python
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(1000, 32, mask_zero=True)(tokens)
    x = keras.layers.Bidirectional(
        keras.layers.GRU(16, return_sequences=True)
    )(x)
    sentence = AttentionPooling(units=32)(x)  # (B, 32)
    ```

    Reference:
        Yang et al., "Hierarchical Attention Networks for Document
        Classification", NAACL 2016, https://aclanthology.org/N16-1174
        (Section 2.2).
    """

    def __init__(self, units, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        check_rate("dropout", dropout)
        self.units = units
        self.dropout = dropout
        self.seed = seed
        self.supports_masking = True
        if dropout > 0:
            self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                "AttentionPooling expects inputs of shape (B, T, d). "
                f"Received: inputs_shape={tuple(inputs_shape)}"
            )
        self.kernel = self.add_weight(
            name="kernel",
            shape=(inputs_shape[-1], self.units),
            initializer="glorot_uniform",
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.units,), initializer="zeros"
        )
        self.context = self.add_weight(
            name="context", shape=(self.units, 1), initializer="glorot_uniform"
        )

    def call(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        hidden = ops.tanh(ops.matmul(inputs, self.kernel) + self.bias)
        scores = ops.squeeze(ops.matmul(hidden, self.context), -1)  # (B, T)
        weights = masked_softmax(scores, mask)  # float32 inside
        weights = ops.cast(weights, inputs.dtype)
        used = weights
        if training and self.dropout > 0:
            used = keras.random.dropout(
                weights, self.dropout, seed=self.seed_generator
            )
        # (B, 1, T) @ (B, T, d) -> (B, 1, d)
        pooled = ops.matmul(ops.expand_dims(used, 1), inputs)
        pooled = ops.squeeze(pooled, 1)  # (B, d)
        if return_attention_scores:
            return pooled, weights
        return pooled

    def compute_mask(self, inputs, previous_mask=None):
        return None

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        pooled = keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return pooled
        weights = keras.KerasTensor(inputs.shape[:2], dtype=self.compute_dtype)
        return pooled, weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {"units": self.units, "dropout": self.dropout, "seed": self.seed}
        )
        return config
