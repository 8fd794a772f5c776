"""Bahdanau (additive) attention with learned query and key projections."""

import math

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_positive_int
from attention_zoo.layers.base_attention import BaseAttention


@attention_zoo_export(
    (
        "attention_zoo.AdditiveAttention",
        "attention_zoo.layers.AdditiveAttention",
    )
)
class AdditiveAttention(BaseAttention):
    """Bahdanau attention: `score(q, k) = v^T tanh(W_q q + W_k k + b)`.

    Query and key are projected to `units` once each (two matmuls), then
    every query-key pair is combined by a broadcast add, a `tanh` and a
    contraction with `v`. With `normalize=True`, `v` is weight-normalised:
    `v' = g * v / ||v||` with a learned scalar `g` initialised to
    `sqrt(1 / units)` (the normalised form of Bahdanau et al.).

    Under mixed precision the projections and the weighted sum run in the
    compute dtype, and the `(B, Tq, Tv, units)` add, `tanh` and contraction
    in float32: that is faster than bfloat16 on CPU, cannot overflow
    float16, and hands the softmax float32 scores.

    Unlike `keras.layers.AdditiveAttention`, which expects projected inputs
    of equal width, this layer owns the projections `W_q`, `W_k`, `b`, so
    query, key and value may have different widths.

    The key projection `W_k k + b` does not depend on the query: a decoder
    computes it once with `precompute_keys(key)` and passes it to
    `attend(query, projected_key, value, ...)` at each step; the result is
    identical to calling the layer.

    Letters: `B` batch, `Tq` query length, `Tv` value length, `dq`, `dk`,
    `dv` the widths of query, key and value.

    Masking: see `BaseAttention`: masked positions get zero weight, fully
    masked rows give zeros, masked queries give zero rows, the output
    carries the query's Keras mask.

    Args:
        units: int, width of the projected space (`W_q`, `W_k`, `b`, `v`).
        use_bias: bool, whether to add `b`. Defaults to `True`.
        normalize: bool, use the weight-normalised `v'`. Defaults to `False`.
        dropout: float in `[0, 1)`, dropout on the attention weights in
            training. Defaults to `0.0`.
        seed: optional int, the dropout seed. Defaults to `None`.
        kernel_initializer: initializer of `W_q`, `W_k` and `v`. Defaults
            to `"glorot_uniform"`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(B, Tq, dq)`, or `(B, dq)` for one decoder step.
        value: `(B, Tv, dv)`.
        key: optional `(B, Tv, dk)`. Defaults to `value`.
        query_mask, value_mask, key_mask, attention_mask, use_causal_mask,
        return_attention_scores, training: as in `BaseAttention`.

    Returns:
        The output `(B, Tq, dv)` (`(B, dv)` for a 2-D query) and, with
        `return_attention_scores=True`, the weights `(B, Tq, Tv)`.

    Example:

    ```python
    layer = AdditiveAttention(units=16)
    decoder_states = np.random.rand(2, 3, 8)  # (B, Tq, dq)
    encoder_outputs = np.random.rand(2, 5, 12)  # (B, Tv, dv)
    context, weights = layer(
        decoder_states, encoder_outputs, return_attention_scores=True
    )  # (2, 3, 12), (2, 3, 5)

    # Decoding: project the keys once, attend at every step.
    keys = layer.precompute_keys(encoder_outputs)  # (2, 5, 16)
    step = layer.attend(decoder_states[:, 0], keys, encoder_outputs)
    ```

    Reference:
        Bahdanau, Cho, Bengio, "Neural Machine Translation by Jointly
        Learning to Align and Translate", ICLR 2015,
        https://arxiv.org/abs/1409.0473 (Appendix A.1.2).
    """

    def __init__(
        self,
        units,
        use_bias=True,
        normalize=False,
        dropout=0.0,
        seed=None,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        check_positive_int("units", units)
        self.units = units
        self.use_bias = use_bias
        self.normalize = normalize
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        self.query_kernel = self.add_weight(
            name="query_kernel",
            shape=(query_shape[-1], self.units),
            initializer=self.kernel_initializer,
        )
        self.key_kernel = self.add_weight(
            name="key_kernel",
            shape=(key_shape[-1], self.units),
            initializer=self.kernel_initializer,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias", shape=(self.units,), initializer="zeros"
            )
        # `v` as a (units, 1) column: the contraction is then one matmul.
        self.v = self.add_weight(
            name="v",
            shape=(self.units, 1),
            initializer=self.kernel_initializer,
        )
        self.g = None
        if self.normalize:
            self.g = self.add_weight(
                name="g",
                shape=(),
                initializer=keras.initializers.Constant(
                    math.sqrt(1.0 / self.units)
                ),
            )

    def _prepare_key(self, key):
        key = ops.matmul(key, self._weight(self.key_kernel))  # (B, Tv, U)
        if self.bias is not None:
            key = key + self._weight(self.bias)
        return key

    def _score(self, query, key):
        query = ops.matmul(query, self._weight(self.query_kernel))  # (B,Tq,U)
        # The (B, Tq, Tv, U) part runs in float32 under mixed precision too:
        # on CPU it is faster than bfloat16, and it cannot overflow float16.
        query = ops.cast(query, "float32")
        key = ops.cast(key, "float32")
        # (B, Tq, 1, U) + (B, 1, Tv, U) -> (B, Tq, Tv, U)
        hidden = ops.tanh(ops.expand_dims(query, 2) + ops.expand_dims(key, 1))
        scores = ops.matmul(hidden, self._v())  # (B, Tq, Tv, 1)
        return ops.squeeze(scores, -1)  # float32, as the softmax wants

    def _v(self):
        """`v`, or `g * v / ||v||` when normalised: float32 `(U, 1)`."""
        v = ops.convert_to_tensor(self.v, "float32")
        if self.g is None:
            return v
        g = ops.convert_to_tensor(self.g, "float32")
        return g * v * ops.rsqrt(ops.sum(ops.square(v)))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "use_bias": self.use_bias,
                "normalize": self.normalize,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
