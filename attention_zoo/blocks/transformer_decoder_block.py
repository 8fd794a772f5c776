"""Pre-norm Transformer decoder block with cached decoding."""

import keras

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.blocks.transformer_block import TransformerBlock
from attention_zoo.blocks.transformer_block import make_feed_forward


@attention_zoo_export(
    (
        "attention_zoo.TransformerDecoderBlock",
        "attention_zoo.blocks.TransformerDecoderBlock",
    )
)
class TransformerDecoderBlock(TransformerBlock):
    """Pre-norm Transformer decoder block (Vaswani et al., 2017).

    Letters: `B` batch, `Tq` decoder steps, `Ts` encoder (source) steps,
    `D` model width, `H` heads, `K` key/value heads, `Dk` = `key_dim`,
    `Tmax` self-attention cache length. With
    `LN` layer normalisation, `MH` multi-head attention and `FFN` the
    two-layer feed-forward network (`D -> feed_forward_dim -> D`):

    `x = x + Dropout(MH_causal(LN(x), LN(x)))`       (self-attention),
    `x = x + Dropout(MH(LN(x), encoder_outputs))`    (cross-attention),
    `x = x + Dropout(FFN(LN(x)))`.

    Masking: self-attention is causal (step `t` sees steps `<= t`) and
    `decoder_mask` `(B, Tq)` hides padded decoder steps; `encoder_mask`
    `(B, Ts)` hides padded source steps in cross-attention. Outputs at
    padded decoder steps are meaningless; the output carries the mask of
    `inputs`.

    Options of `MultiHead`: `num_key_value_heads=K` gives both attentions
    `K` key/value heads shared by groups of `H / K` query heads
    (grouped-query attention; `1`: multi-query), so both caches hold `K`
    heads. `sliding_window=W` applies to the self-attention only: step `t`
    sees the `W` most recent steps `t - W < s <= t` (weights exactly 0
    elsewhere, cached or not); source and target positions do not line
    up, so cross-attention sees every source step. `use_gate=True` gates
    both attentions: each head's output times `sigmoid(LN(x) W^G + b^G)`
    (Qiu et al., 2025). With the defaults the block is the plain one,
    weight for weight.

    Cached decoding (the contract of keras-hub's `TransformerDecoder`, with
    our `MultiHead` caches): `get_initial_cache(B, Tmax)` gives an empty
    self-attention cache `(B, 2, Tmax, K, Dk)`;
    `compute_cross_attention_cache(encoder_outputs)` projects the encoder's
    keys and values once, `(B, 2, Ts, K, Dk)`. Call with
    `self_attention_cache` and `cache_update_index=i` to process steps
    `i, ..., i + Tq - 1`: they are written into the cache and attend to all
    cached steps `<= i + t`; the updated cache is returned. With
    `cross_attention_cache` the encoder keys/values come from it and
    `encoder_outputs` is not projected. Cached step-by-step decoding equals
    the full causal pass.

    Args:
        num_heads: int, `H`.
        key_dim: int, size `Dk` of each attention head.
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
            heads `K` of both attentions. Defaults to `None` (`num_heads`).
        sliding_window: optional int, width `W` of the self-attention's
            window. Defaults to `None` (every earlier step).
        use_gate: bool, gate both attentions' heads. Defaults to `False`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, Tq, D)` decoder inputs.
        encoder_outputs: `(B, Ts, De)`.
        decoder_mask: optional bool `(B, Tq)`, True = real step.
        encoder_mask: optional bool `(B, Ts)`, True = real source step.
        self_attention_cache: optional `(B, 2, Tmax, K, Dk)`.
        cross_attention_cache: optional `(B, 2, Ts, K, Dk)`.
        cache_update_index: int or scalar int tensor, position of the
            first step of `inputs` (needed with `self_attention_cache`).
        return_attention_scores: bool, also return the cross-attention
            weights `(B, H, Tq, Ts)`. Defaults to `False`.
        training: bool, whether dropout is active.

    Returns:
        `output` `(B, Tq, D)`, then the cross-attention weights if asked,
        then the updated self-attention cache if one was given: `output`,
        `(output, weights)`, `(output, cache)` or `(output, weights, cache)`.

    Example:

    >>> block = TransformerDecoderBlock(num_heads=2, key_dim=4,
    ...                                 feed_forward_dim=16)
    >>> y, memory = np.ones((2, 3, 8), "float32"), np.ones((2, 5, 8))
    >>> tuple(block(y, memory).shape)
    (2, 3, 8)
    >>> cache = block.get_initial_cache(2, max_length=3)
    >>> out, cache = block(y[:, :1], memory, self_attention_cache=cache,
    ...                    cache_update_index=0)
    >>> mqa = TransformerDecoderBlock(num_heads=2, key_dim=4,
    ...     feed_forward_dim=16, num_key_value_heads=1, sliding_window=2)
    >>> _ = mqa(y, memory)
    >>> tuple(mqa.get_initial_cache(2, max_length=3).shape)
    (2, 2, 3, 1, 4)

    Reference:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
        https://arxiv.org/abs/1706.03762; Ainslie et al., "GQA", EMNLP
        2023, https://arxiv.org/abs/2305.13245; Jiang et al., "Mistral
        7B", 2023, https://arxiv.org/abs/2310.06825; Qiu et al., "Gated
        Attention for Large Language Models", 2025,
        https://arxiv.org/abs/2505.06708
    """

    def build(self, inputs_shape, encoder_outputs_shape):
        width = inputs_shape[-1]
        policy = self.dtype_policy
        for role in ("self_attention", "cross_attention", "feed_forward"):
            norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon,
                dtype=policy,
                name=f"{role}_norm",
            )
            norm.build(inputs_shape)
            setattr(self, f"_{role}_norm", norm)
        self._self_attention = self._make_attention(
            "self_attention", sliding_window=self.sliding_window
        )
        self._self_attention.build(inputs_shape, inputs_shape)
        # No window: source and target positions do not line up.
        self._cross_attention = self._make_attention(
            "cross_attention", output_dim=width
        )
        self._cross_attention.build(inputs_shape, encoder_outputs_shape)
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

    def call(
        self,
        inputs,
        encoder_outputs,
        decoder_mask=None,
        encoder_mask=None,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
    ):
        if (self_attention_cache is None) != (cache_update_index is None):
            raise ValueError(
                "`self_attention_cache` and `cache_update_index` go "
                "together. Received: self_attention_cache="
                f"{'None' if self_attention_cache is None else 'a tensor'}"
                f", cache_update_index={cache_update_index}"
            )
        h = self._self_attention_norm(inputs)
        if self_attention_cache is None:
            h = self._self_attention(
                h,
                h,
                query_mask=decoder_mask,
                value_mask=decoder_mask,
                use_causal_mask=True,
                training=training,
            )
        else:
            # The cache holds steps < cache_update_index; the step attends
            # to them and to itself (causal within the step).
            h, self_attention_cache = self._self_attention(
                h,
                h,
                query_mask=decoder_mask,
                cache=self_attention_cache,
                cache_update_index=cache_update_index,
                training=training,
            )
        x = inputs + self._dropout_layer(h, training=training)

        h = self._cross_attention(
            self._cross_attention_norm(x),
            encoder_outputs,
            query_mask=decoder_mask,
            value_mask=encoder_mask,
            cache=cross_attention_cache,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        weights = None
        if return_attention_scores:
            h, weights = h[0], h[1]  # weights (B, H, Tq, Ts)
        elif cross_attention_cache is not None:
            h = h[0]  # the read-only cache comes back unchanged
        x = x + self._dropout_layer(h, training=training)

        h = self._ffn_output(self._ffn_inner(self._feed_forward_norm(x)))
        x = x + self._dropout_layer(h, training=training)  # (B, Tq, D)

        outputs = (x,)
        if return_attention_scores:
            outputs += (weights,)
        if self_attention_cache is not None:
            outputs += (self_attention_cache,)
        return outputs[0] if len(outputs) == 1 else outputs

    def get_initial_cache(self, batch_size, max_length):
        """An empty self-attention cache `(B, 2, Tmax, K, Dk)` (zeros)."""
        return self._self_attention.get_initial_cache(batch_size, max_length)

    def compute_cross_attention_cache(self, encoder_outputs):
        """Projected encoder keys and values `(B, 2, Ts, K, Dk)`, once."""
        return self._cross_attention.compute_cache(encoder_outputs)

    def compute_mask(self, inputs, previous_mask=None):
        return previous_mask

    def compute_output_shape(self, inputs_shape, encoder_outputs_shape):
        return tuple(inputs_shape)

    def compute_output_spec(
        self,
        inputs,
        encoder_outputs,
        decoder_mask=None,
        encoder_mask=None,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
    ):
        outputs = (keras.KerasTensor(inputs.shape, dtype=self.compute_dtype),)
        if return_attention_scores:
            source_length = encoder_outputs.shape[1]
            if cross_attention_cache is not None:
                source_length = cross_attention_cache.shape[2]
            shape = (
                inputs.shape[0],
                self.num_heads,
                inputs.shape[1],
                source_length,
            )
            outputs += (keras.KerasTensor(shape, dtype=self.compute_dtype),)
        if self_attention_cache is not None:
            outputs += (
                keras.KerasTensor(
                    self_attention_cache.shape, dtype=self.compute_dtype
                ),
            )
        return outputs[0] if len(outputs) == 1 else outputs
