"""Luong's local attention: a window of the source around an aligned point."""

from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_choice
from attention_zoo.checks import check_positive_int
from attention_zoo.layers.masked_softmax import masked_softmax
from attention_zoo.layers.named_score_attention import NamedScoreAttention

_MODES = ("monotonic", "predictive")


@attention_zoo_export(
    ("attention_zoo.LocalAttention", "attention_zoo.layers.LocalAttention")
)
class LocalAttention(NamedScoreAttention):
    """Luong local attention: attend only to `[p_t - D, p_t + D]`.

    Each query `h_t` first picks an aligned source position `p_t`:

    - `mode="monotonic"` (local-m): `p_t = t`, the query's position
      (`start_index + t`), clipped to `S - 1` when the source is shorter;
    - `mode="predictive"` (local-p): `p_t = S sigmoid(v_p^T tanh(W_p h_t))`,
      a real number in `[0, S]` learned with the model,

    where `S` is the source length (the number of unmasked positions).
    The weights are a softmax of the scores (`score(h_t, k_s)`, any of
    Luong's or Bahdanau's) over the positions `s` with
    `|s - p_t| <= D = window`, and every other position gets exactly zero
    weight. Local-p then multiplies them by a Gaussian centred on `p_t`,
    `exp(-(s - p_t)^2 / (2 sigma^2))` with `sigma = D / 2`, and does not
    renormalise, as in the paper: its weights sum to less than 1, and the
    gradient reaches `W_p` and `v_p` through the Gaussian. The output is
    `weights @ value`.

    Scores, softmax, positions and the Gaussian run in float32 under mixed
    precision (a bfloat16 position would be off by 2 past position 256);
    the weighted sum runs in the compute dtype.

    Letters: `B` batch, `Tq` query length, `Tv` source length, `dq`, `dk`,
    `dv` the widths of query, key and value, `D` the window.

    Masking: masked source positions (`value_mask`, `key_mask`) get zero
    weight and do not count in `S`; a window without an unmasked position
    gives zero weights and a zero output (never NaN). Masked queries give
    zero rows. Keras masks of the inputs fill these arguments, and the
    output carries the query's mask.

    Args:
        window: int, `D`: the window holds `2 D + 1` positions. Defaults
            to `10` (the paper's).
        mode: str, `"monotonic"` (local-m) or `"predictive"` (local-p).
            Defaults to `"monotonic"`.
        score: str, `"general"` (`h^T W k`), `"dot"`, `"scaled_dot"` or
            `"additive"` (`v^T tanh(W_q h + W_k k + b)`). Defaults to
            `"general"`.
        units: int, the width of the additive score's projection and of
            local-p's `W_p`, only with `score="additive"` or
            `mode="predictive"`. Defaults to `None`: the key's width.
        dropout: float in `[0, 1)`, dropout on the weights in training.
            Defaults to `0.0`.
        seed: optional int, the dropout seed. Defaults to `None`.
        kernel_initializer: initializer of the score's kernels, `W_p` and
            `v_p`. Defaults to `"glorot_uniform"`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(B, Tq, dq)`, or `(B, dq)` for one decoder step.
        value: `(B, Tv, dv)`.
        key: optional `(B, Tv, dk)`. Defaults to `value`.
        query_mask: optional bool `(B, Tq)` (`(B,)` with a 2-D query).
        value_mask: optional bool `(B, Tv)`.
        key_mask: optional bool `(B, Tv)`, combined with `value_mask`.
        start_index: int or int tensor (scalar or `(B,)`), the position of
            the first query: query `t` is at `start_index + t` (local-m
            only). A decoder step `t` passes its query `(B, dq)` with
            `start_index=t`. Defaults to `0`.
        return_attention_scores: bool, also return the weights. Defaults
            to `False`.
        training: bool, dropout is applied only in training.

    Returns:
        The output `(B, Tq, dv)` (`(B, dv)` for a 2-D query) and, with
        `return_attention_scores=True`, the weights `(B, Tq, Tv)` (before
        dropout).

    Example:

    ```python
    layer = LocalAttention(window=2, mode="predictive", units=16)
    decoder_states = np.random.rand(2, 3, 8)  # (B, Tq, dq)
    encoder_outputs = np.random.rand(2, 9, 8)  # (B, Tv, dv)
    context, weights = layer(
        decoder_states, encoder_outputs, return_attention_scores=True
    )  # (2, 3, 8); at most 5 non-zero weights per row

    local_m = LocalAttention(window=2)
    step = local_m(decoder_states[:, 1], encoder_outputs, start_index=1)
    ```

    Reference:
        Luong, Pham, Manning, "Effective Approaches to Attention-based
        Neural Machine Translation", EMNLP 2015,
        https://arxiv.org/abs/1508.04025 (Section 3.2).
    """

    def __init__(
        self,
        window=10,
        mode="monotonic",
        score="general",
        units=None,
        dropout=0.0,
        seed=None,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        check_positive_int("window", window)
        check_choice("mode", mode, _MODES)
        self.window = window
        self.mode = mode  # read by `_uses_units` in the base's checks
        super().__init__(
            score,
            units=units,
            kernel_initializer=kernel_initializer,
            dropout=dropout,
            seed=seed,
            **kwargs,
        )

    def _uses_units(self):
        return self.score == "additive" or self.mode == "predictive"

    def _units_users(self):
        return "score='additive' or mode='predictive'"

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        if self.mode == "predictive":
            units = self._width(value_shape if key_shape is None else key_shape)
            # W_p and v_p stay float32 (no autocast): positions need it.
            self.position_kernel = self.add_weight(
                name="position_kernel",
                shape=(query_shape[-1], units),
                initializer=self.kernel_initializer,
                autocast=False,
            )
            self.position_v = self.add_weight(
                name="position_v",
                shape=(units, 1),
                initializer=self.kernel_initializer,
                autocast=False,
            )

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        start_index=0,
        return_attention_scores=False,
        training=None,
    ):
        return self._attend(
            query,
            self._prepare_key(value if key is None else key),
            value,
            query_mask=query_mask,
            value_mask=value_mask,
            key_mask=key_mask,
            return_attention_scores=return_attention_scores,
            training=training,
            start_index=start_index,
        )

    def _distribute(
        self, scores, mask, query, query_mask, training, start_index=0
    ):
        """Float32 scores -> the softmax inside the window (times local-p's
        Gaussian), zero outside."""
        value_length = ops.shape(scores)[2]
        if mask is None:
            source_length = ops.cast(value_length, "float32")
        else:  # mask (B, 1, Tv): the source's own mask
            source_length = ops.sum(ops.cast(mask, "float32"), -1)  # (B, 1)
        centre = self._aligned_positions(query, source_length, start_index)
        positions = ops.cast(ops.arange(value_length), "float32")
        # (B, Tq, 1) against (Tv,) -> (B, Tq, Tv)
        distance = positions - ops.expand_dims(centre, -1)
        in_window = ops.abs(distance) <= float(self.window)
        keep = in_window if mask is None else ops.logical_and(mask, in_window)
        weights = masked_softmax(scores, keep)  # float32, exact zeros
        if self.mode == "predictive":
            sigma = self.window / 2.0
            weights = weights * ops.exp(-ops.square(distance) / (2 * sigma**2))
        return weights, []

    def _aligned_positions(self, query, source_length, start_index):
        """float32 `p_t`, broadcastable to `(B, Tq)`.

        `source_length` is a float32 scalar or `(B, 1)`.
        """
        if self.mode == "predictive":
            # The whole position network in float32.
            hidden = ops.tanh(
                ops.matmul(ops.cast(query, "float32"), self.position_kernel)
            )  # (B, Tq, U)
            logits = ops.squeeze(ops.matmul(hidden, self.position_v), -1)
            return source_length * ops.sigmoid(logits)  # (B, Tq)
        query_length = ops.shape(query)[1]
        start = ops.reshape(ops.cast(start_index, "float32"), (-1, 1))
        positions = start + ops.cast(ops.arange(query_length), "float32")
        return ops.minimum(positions, source_length - 1.0)  # (1|B, Tq)

    def get_config(self):
        config = super().get_config()
        config.update({"window": self.window, "mode": self.mode})
        return config
