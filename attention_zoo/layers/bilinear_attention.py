"""Luong (multiplicative) attention and its low-rank bilinear variant."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.layers.base_attention import BaseAttention

_SCORES = ("general", "dot", "scaled_dot", "low_rank")


@attention_zoo_export(
    (
        "attention_zoo.BilinearAttention",
        "attention_zoo.layers.BilinearAttention",
    )
)
class BilinearAttention(BaseAttention):
    """Luong attention: multiplicative scores between queries and keys.

    Scores, for a query `q` (width `dq`) and a key `k` (width `dk`):

    - `"general"`: `q^T W k`, `W` of shape `(dq, dk)` (query times `W` first,
      which is cheaper when `Tq <= Tv`);
    - `"dot"`: `q^T k` (needs `dq == dk`, no weights);
    - `"scaled_dot"`: `q^T k / sqrt(dk)` (needs `dq == dk`, no weights);
    - `"low_rank"`: `p^T (U q * V k)`, the low-rank bilinear form with
      `U` `(dq, rank)`, `V` `(dk, rank)`, `p` `(rank,)`; computed as
      `(U q * p) . (V k)`, a single matmul, without the `(Tq, Tv, rank)`
      product.

    Letters: `B` batch, `Tq` query length, `Tv` value length, `dq`, `dk`,
    `dv` the widths of query, key and value.

    Masking: see `BaseAttention`: masked positions get zero weight, fully
    masked rows give zeros, masked queries give zero rows, the output
    carries the query's Keras mask.

    Args:
        score: str, one of `"general"`, `"dot"`, `"scaled_dot"`,
            `"low_rank"`. Defaults to `"general"`.
        rank: int, the rank of the `"low_rank"` form (required there, not
            allowed with the other scores). Defaults to `None`.
        dropout: float in `[0, 1)`, dropout on the attention weights in
            training. Defaults to `0.0`.
        seed: optional int, the dropout seed. Defaults to `None`.
        kernel_initializer: initializer of `W`, `U`, `V`, `p`. Defaults to
            `"glorot_uniform"`.
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
    layer = BilinearAttention(score="general")
    decoder_states = np.random.rand(2, 3, 8)  # (B, Tq, dq)
    encoder_outputs = np.random.rand(2, 5, 12)  # (B, Tv, dv)
    context = layer(decoder_states, encoder_outputs)  # (2, 3, 12)
    ```

    References:
        Luong, Pham, Manning, "Effective Approaches to Attention-based Neural
        Machine Translation", EMNLP 2015, https://arxiv.org/abs/1508.04025
        (Section 3.1). Kim et al., "Hadamard Product for Low-rank Bilinear
        Pooling", ICLR 2017, https://arxiv.org/abs/1610.04325.
    """

    def __init__(
        self,
        score="general",
        rank=None,
        dropout=0.0,
        seed=None,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        if score not in _SCORES:
            raise ValueError(
                f"`score` must be one of {_SCORES}. Received: score={score!r}"
            )
        if score == "low_rank":
            if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
                raise ValueError(
                    "`rank` must be a positive integer with "
                    f"score='low_rank'. Received: rank={rank!r}"
                )
        elif rank is not None:
            raise ValueError(
                "`rank` is only used with score='low_rank'. "
                f"Received: rank={rank!r} with score={score!r}"
            )
        self.score = score
        self.rank = rank
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        query_dim, key_dim = query_shape[-1], key_shape[-1]
        if self.score in ("dot", "scaled_dot") and query_dim != key_dim:
            raise ValueError(
                f"score={self.score!r} needs queries and keys of the same "
                f"width. Received: query_shape={tuple(query_shape)}, "
                f"key_shape={tuple(key_shape)}"
            )
        if self.score == "general":
            self.kernel = self.add_weight(
                name="kernel",
                shape=(query_dim, key_dim),
                initializer=self.kernel_initializer,
            )
        elif self.score == "low_rank":
            self.query_kernel = self.add_weight(
                name="query_kernel",
                shape=(query_dim, self.rank),
                initializer=self.kernel_initializer,
            )
            self.key_kernel = self.add_weight(
                name="key_kernel",
                shape=(key_dim, self.rank),
                initializer=self.kernel_initializer,
            )
            self.pooling_kernel = self.add_weight(
                name="pooling_kernel",
                shape=(self.rank,),
                initializer=self.kernel_initializer,
            )

    def _prepare_key(self, key):
        if self.score == "low_rank":
            return ops.matmul(key, self._weight(self.key_kernel))  # (B,Tv,R)
        return key

    def _score(self, query, key):
        if self.score == "general":
            query = ops.matmul(query, self._weight(self.kernel))  # (B,Tq,dk)
        elif self.score == "scaled_dot":
            # Scale the (smaller) query rather than the scores.
            scale = 1.0 / query.shape[-1] ** 0.5
            query = query * ops.cast(scale, query.dtype)
        elif self.score == "low_rank":
            query = ops.matmul(query, self._weight(self.query_kernel))
            query = query * self._weight(self.pooling_kernel)  # (B, Tq, R)
        # An einsum rather than matmul(query, swapaxes(key)): no explicit
        # transpose, measurably faster on CPU (forward and backward).
        return ops.einsum("bqd,bkd->bqk", query, key)  # (B, Tq, Tv)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "rank": self.rank,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
