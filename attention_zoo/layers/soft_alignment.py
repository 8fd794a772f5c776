"""Soft alignment of two sequences both ways (decomposable attention)."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.layers.key_network import apply_key_network
from attention_zoo.layers.key_network import build_key_network
from attention_zoo.layers.key_network import check_key_network
from attention_zoo.layers.masked_softmax import masked_softmax
from attention_zoo.layers.masked_softmax import zero_masked_queries


@attention_zoo_export(
    ("attention_zoo.SoftAlignment", "attention_zoo.layers.SoftAlignment")
)
class SoftAlignment(keras.layers.Layer):
    """The "attend" step of decomposable attention: each side aligned to
    the other through one score matrix.

    With scores `e_ij = F(a_i)^T F(b_j)` (textbook eq. 15.46), where `F`
    is a feed-forward network (`key_units`, shared by both sides) or the
    identity, the outputs are

    - `beta_i = sum_j softmax_j(e_ij) b_j`: the part of `b` aligned to
      `a_i` (textbook eq. 15.47), one row per position of `a`;
    - `alpha_j = sum_i softmax_i(e_ij) a_i`: the part of `a` aligned to
      `b_j` (eq. 15.50), one row per position of `b`.

    Both come from the same `e`, normalised over its columns for `beta` and
    over its rows for `alpha`. The only weights are those of `F`.

    Letters: `B` batch, `m` length of `a`, `n` length of `b`, `d` width.

    Masking: positions where `b`'s mask is False get zero weight in `beta`
    and their rows of `alpha` are zero; likewise for `a`. A sequence with
    every position masked gives zeros (never NaN). Keras masks of `a` and
    `b` (e.g. from `Embedding(mask_zero=True)`) are used automatically;
    `beta` carries the mask of `a` and `alpha` the mask of `b`, as Keras
    passes masks for a list input (the convention of `keras.layers.
    Attention`). Softmaxes run in float32 under mixed precision.

    Args:
        key_units: None, or a sequence of ints: the widths of the layers of
            `F` (each a Dense layer with `activation`, after dropout).
            `None` scores the inputs directly (`a` and `b` must then have
            the same width). Defaults to `None`.
        activation: activation of `F`'s layers. Defaults to `"relu"`.
        dropout: float in `[0, 1)`, dropout before each layer of `F` in
            training. Defaults to `0.0`.
        seed: optional int, the dropout seed. Defaults to `None`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a list `[a, b]`: `a` `(B, m, d)`, the first sequence
            (premise), and `b` `(B, n, d)`, the second (hypothesis).
        mask: optional list `[a_mask, b_mask]` of bool `(B, m)` and
            `(B, n)` (or None), True = keep.
        return_attention_scores: bool, also return both weight matrices.
            Defaults to `False`.
        training: bool, dropout in `F` is applied only in training.

    Returns:
        `(beta, alpha)` with `beta` `(B, m, d_b)` and `alpha` `(B, n, d_a)`;
        with `return_attention_scores=True`, `(beta, alpha, a_to_b,
        b_to_a)` where `a_to_b` `(B, m, n)` holds the weights of `beta`
        (rows sum to 1) and `b_to_a` `(B, n, m)` those of `alpha`.

    Example:

    ```python
    premise = keras.Input((None, 32))
    hypothesis = keras.Input((None, 32))
    beta, alpha = SoftAlignment(key_units=(64, 64))([premise, hypothesis])
    ```

    Reference:
        Parikh et al., "A Decomposable Attention Model for Natural Language
        Inference", EMNLP 2016, https://aclanthology.org/D16-1244
        (Section 3.1).
    """

    def __init__(
        self,
        key_units=None,
        activation="relu",
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.key_units = check_key_network(key_units, dropout)
        self.activation = keras.activations.get(activation)
        self.dropout = dropout
        self.seed = seed
        self.supports_masking = True

    def build(self, inputs_shape):
        a_shape, b_shape = _pair("inputs_shape", inputs_shape)
        for name, shape in (("a", a_shape), ("b", b_shape)):
            if len(shape) != 3:
                raise ValueError(
                    f"SoftAlignment expects `{name}` of shape (B, T, d). "
                    f"Received: {name}_shape={tuple(shape)}"
                )
        if (
            a_shape[-1] is not None
            and b_shape[-1] is not None
            and a_shape[-1] != b_shape[-1]
        ):
            raise ValueError(
                "`a` and `b` must have the same width to be scored against "
                f"each other. Received: a_shape={tuple(a_shape)}, "
                f"b_shape={tuple(b_shape)}"
            )
        self.key_network = build_key_network(
            self,
            a_shape[-1],
            self.key_units,
            self.activation,
            self.dropout,
            self.seed,
        )

    def call(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        a, b = _pair("inputs", inputs)
        a_mask, b_mask = (
            _pair("mask", mask) if mask is not None else (None,) * 2
        )
        a_key = apply_key_network(self.key_network, a, training)
        b_key = apply_key_network(self.key_network, b, training)
        scores = ops.matmul(a_key, ops.swapaxes(b_key, -1, -2))  # (B, m, n)
        b_keep = None if b_mask is None else ops.expand_dims(b_mask, 1)
        a_keep = None if a_mask is None else ops.expand_dims(a_mask, 1)
        # Over j (columns) for beta; over i for alpha, on e^T (B, n, m).
        a_to_b = masked_softmax(scores, b_keep)
        b_to_a = masked_softmax(ops.swapaxes(scores, -1, -2), a_keep)
        a_to_b = zero_masked_queries(ops.cast(a_to_b, b.dtype), a_mask)
        b_to_a = zero_masked_queries(ops.cast(b_to_a, a.dtype), b_mask)
        beta = ops.matmul(a_to_b, b)  # (B, m, d)
        alpha = ops.matmul(b_to_a, a)  # (B, n, d)
        if return_attention_scores:
            return beta, alpha, a_to_b, b_to_a
        return beta, alpha

    def compute_mask(self, inputs, mask=None):
        # Keras calls this without the call's flags, so the two weight
        # matrices (when returned) get no mask from the `None`s that
        # `zip` leaves out.
        if mask is None:
            return [None, None]
        return list(_pair("mask", mask))

    def compute_output_shape(self, inputs_shape):
        a_shape, b_shape = _pair("inputs_shape", inputs_shape)
        batch, m, n = a_shape[0], a_shape[1], b_shape[1]
        return (batch, m, b_shape[-1]), (batch, n, a_shape[-1])

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        a, b = _pair("inputs", inputs)
        beta_shape, alpha_shape = self.compute_output_shape([a.shape, b.shape])
        dtype = self.compute_dtype
        outputs = [
            keras.KerasTensor(beta_shape, dtype=dtype),
            keras.KerasTensor(alpha_shape, dtype=dtype),
        ]
        if return_attention_scores:
            m, n = a.shape[1], b.shape[1]
            outputs += [
                keras.KerasTensor((a.shape[0], m, n), dtype=dtype),
                keras.KerasTensor((a.shape[0], n, m), dtype=dtype),
            ]
        return tuple(outputs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "key_units": self.key_units,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "seed": self.seed,
            }
        )
        return config


def _pair(name, value):
    """`value` as a 2-tuple, or a ValueError naming the argument."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(
            f"SoftAlignment expects `{name}` to be a list [a, b] of two "
            f"sequences. Received: {name}={value!r}"[:300]
        )
    return tuple(value)
