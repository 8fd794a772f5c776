"""Pre-norm Transformer encoder block: self-attention and feed-forward."""

import keras

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.blocks.transformer_block import TransformerBlock
from attention_zoo.blocks.transformer_block import make_feed_forward


@attention_zoo_export(
    (
        "attention_zoo.TransformerEncoderBlock",
        "attention_zoo.blocks.TransformerEncoderBlock",
    )
)
class TransformerEncoderBlock(TransformerBlock):
    """Pre-norm Transformer encoder block (Vaswani et al.; Xiong et al.).

    Letters: `B` batch, `T` steps, `D` model width (the input width), `H`
    heads. With `LN` layer normalisation, `MH` multi-head self-attention
    (`H` heads of size `key_dim`, output width `D`) and `FFN(x) =
    relu(x W_1 + b_1) W_2 + b_2` (`D -> feed_forward_dim -> D`):

    `x = x + Dropout(MH(LN(x), LN(x)))`,
    `x = x + Dropout(FFN(LN(x)))`.

    Normalising the input of each sub-layer (pre-norm) rather than its
    output keeps the residual path an identity and trains without warm-up;
    a stack of these blocks needs one final `LayerNormalization`.

    Masking: a padding mask `(B, T)` (e.g. from `Embedding(mask_zero=True)`
    upstream, or passed as `mask`) hides padded keys; outputs at padded
    steps are meaningless and the output carries the mask. Outputs at real
    steps do not depend on the padded steps.

    The self-attention takes `MultiHead`'s three options: `K =
    num_key_value_heads` key/value heads shared by groups of `H / K` query
    heads (grouped-query attention; `1`: multi-query), a `sliding_window`
    `W` (step `i` attends only to steps `j` with `|i - j| < W`, the band of
    local attention: the encoder is not causal, so it sees `W - 1` steps on
    each side; weights are exactly 0 outside) and `use_gate` (each head's
    output times `sigmoid(LN(x) W^G + b^G)`, Qiu et al., 2025). With the
    defaults the block is the plain one, weight for weight.

    Args:
        num_heads: int, `H`.
        key_dim: int, size of each attention head.
        feed_forward_dim: int, inner width of the feed-forward network.
        dropout: float in `[0, 1)`, dropout on each sub-layer's output
            before the residual sum. Defaults to `0.0`.
        activation: activation of the feed-forward network. Defaults to
            `"relu"`.
        layer_norm_epsilon: float, epsilon of the layer norms. Defaults to
            `1e-5`.
        seed: optional int, seed of the dropout.
        attention_dropout: float in `[0, 1)`, dropout on the attention
            weights of every attention (`MultiHead`'s `dropout`).
            Defaults to `0.0`.
        num_key_value_heads: optional int dividing `num_heads`, key/value
            heads `K` of the self-attention. Defaults to `None`
            (`num_heads`).
        sliding_window: optional int, width `W` of the self-attention's
            window. Defaults to `None` (every step).
        use_gate: bool, gate the self-attention's heads. Defaults to
            `False`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, T, D)`.
        mask: optional bool `(B, T)`, True = real step.
        training: bool, whether dropout is active.

    Returns:
        `(B, T, D)`.

    Example:

    >>> block = TransformerEncoderBlock(num_heads=2, key_dim=4,
    ...                                 feed_forward_dim=16)
    >>> x = np.ones((2, 5, 8), "float32")
    >>> tuple(block(x).shape)
    (2, 5, 8)
    >>> local = TransformerEncoderBlock(num_heads=4, key_dim=2,
    ...     feed_forward_dim=16, num_key_value_heads=1, sliding_window=2,
    ...     use_gate=True)
    >>> tuple(local(x).shape)
    (2, 5, 8)

    Reference:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
        https://arxiv.org/abs/1706.03762; Xiong et al., "On Layer
        Normalization in the Transformer Architecture", ICML 2020,
        https://arxiv.org/abs/2002.04745; Ainslie et al., "GQA", EMNLP
        2023, https://arxiv.org/abs/2305.13245; Qiu et al., "Gated
        Attention for Large Language Models", 2025,
        https://arxiv.org/abs/2505.06708
    """

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        policy = self.dtype_policy
        self._self_attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=policy,
            name="self_attention_norm",
        )
        self._self_attention_norm.build(inputs_shape)
        self._self_attention = self._make_attention(
            "self_attention", sliding_window=self.sliding_window
        )
        self._self_attention.build(inputs_shape, inputs_shape)
        self._feed_forward_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=policy,
            name="feed_forward_norm",
        )
        self._feed_forward_norm.build(inputs_shape)
        self._ffn_inner, self._ffn_output = make_feed_forward(
            self, width, "feed_forward"
        )
        self._ffn_inner.build(inputs_shape)
        self._ffn_output.build(
            tuple(inputs_shape[:-1]) + (self.feed_forward_dim,)
        )
        self._dropout_layer = keras.layers.Dropout(
            self.dropout, seed=self.seed, dtype=policy, name="dropout"
        )

    def call(self, inputs, mask=None, training=None):
        h = self._self_attention_norm(inputs)
        h = self._self_attention(
            h, h, query_mask=mask, value_mask=mask, training=training
        )
        x = inputs + self._dropout_layer(h, training=training)
        h = self._ffn_output(self._ffn_inner(self._feed_forward_norm(x)))
        return x + self._dropout_layer(h, training=training)  # (B, T, D)

    def compute_mask(self, inputs, previous_mask=None):
        return previous_mask

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)
