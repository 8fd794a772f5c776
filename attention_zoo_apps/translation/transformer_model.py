"""Transformer translator and its cached step-by-step decoding adapter."""

import keras
from keras import ops

from attention_zoo.blocks.positional_embedding import PositionalEmbedding
from attention_zoo.blocks.transformer_decoder_block import (
    TransformerDecoderBlock,
)
from attention_zoo.blocks.transformer_encoder_block import (
    TransformerEncoderBlock,
)
from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo_apps.translation.adapter import TranslationAdapter

_LAYER_NORM_EPSILON = 1e-5


@keras.saving.register_keras_serializable(
    package="translation", name="LogitsBias"
)
class LogitsBias(keras.layers.Layer):
    """Adds a learned bias `(V,)` to tied logits `h E^T` and returns float32.

    The output layer of a translator with `tie_embeddings=True`: the
    scores come from `PositionalEmbedding(..., reverse=True)` (the target
    embedding matrix transposed); this layer adds the per-token bias. Use
    it with `dtype="float32"` so logits are float32 under mixed precision.

    Args:
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(B, T, V)` scores.

    Returns:
        `(B, T, V)` logits.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def build(self, inputs_shape):
        self.bias = self.add_weight(
            name="bias", shape=(inputs_shape[-1],), initializer="zeros"
        )

    def call(self, inputs):
        return inputs + ops.cast(self.bias, inputs.dtype)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)


def build_transformer_translator(
    source_vocabulary_size,
    target_vocabulary_size,
    num_layers=2,
    decoder_layers=None,
    model_dim=256,
    num_heads=4,
    feed_forward_dim=1024,
    dropout=0.1,
    positions="sinusoidal",
    max_length=256,
    tie_embeddings=False,
    num_key_value_heads=None,
    sliding_window=None,
    use_gate=False,
    attention_dropout=0.0,
    name="transformer_translator",
):
    """A pre-norm encoder-decoder Transformer (Vaswani et al., 2017).

    Source ids -> `PositionalEmbedding` ("source_embedding") -> dropout ->
    `num_layers` `TransformerEncoderBlock`s ("encoder_0", ...) ->
    `LayerNormalization` ("encoder_norm"). Target ids (shifted right,
    starting with START) -> "target_embedding" -> dropout ->
    `decoder_layers` `TransformerDecoderBlock`s ("decoder_0", ...: causal
    self-attention, cross-attention over the encoder output) ->
    "decoder_norm" -> "logits"
    (a float32 `Dense`, or with `tie_embeddings=True` the target embedding
    matrix transposed plus a bias, `LogitsBias`). Id 0 is padding: it is
    masked in every attention, and the logits carry the target mask, so
    Keras losses skip padded steps. `num_key_value_heads`, `sliding_window`
    and `use_gate` go to every block (see `TransformerDecoderBlock`: the
    window is on self-attention only, in the encoder a band `|i - j| < W`,
    in the decoder the `W` most recent steps).

    Args:
        source_vocabulary_size: int, source vocabulary size.
        target_vocabulary_size: int, target vocabulary size `V`.
        num_layers: int, encoder blocks, and decoder blocks unless
            `decoder_layers` is given. Defaults to `2`.
        decoder_layers: optional int, decoder blocks (a shallow decoder
            makes each decoding step cheaper). Defaults to `None`
            (`num_layers`).
        model_dim: int, model width `D` (a multiple of `num_heads`).
            Defaults to `256`.
        num_heads: int, attention heads; each has size
            `model_dim // num_heads`. Defaults to `4`.
        feed_forward_dim: int, inner width of the feed-forward networks.
            Defaults to `1024`.
        dropout: float in `[0, 1)`, dropout on embeddings and sub-layer
            outputs. Defaults to `0.1`.
        positions: `"sinusoidal"` or `"learned"`. Defaults to
            `"sinusoidal"`.
        max_length: int, longest source or target sequence (size of the
            learned position tables). Defaults to `256`.
        tie_embeddings: bool, compute the logits with the target embedding
            matrix (fewer weights). Defaults to `False`.
        num_key_value_heads: optional int dividing `num_heads`, key/value
            heads of every attention (grouped-query; `1`: multi-query;
            the decoding caches hold that many heads). Defaults to `None`
            (`num_heads`).
        sliding_window: optional int, window of every self-attention.
            Defaults to `None` (none).
        use_gate: bool, gate every attention's heads. Defaults to `False`.
        attention_dropout: float in `[0, 1)`, dropout on every attention's
            weights. Defaults to `0.0`.
        name: str, model name. Defaults to `"transformer_translator"`.

    Returns:
        A functional `keras.Model` with inputs `{"source": int32 (B, Ts),
        "target_in": int32 (B, Tt)}` and float32 logits
        `(B, Tt, target_vocabulary_size)`.

    Example:

    >>> model = build_transformer_translator(100, 120, model_dim=16,
    ...                                      num_heads=2, feed_forward_dim=32)
    >>> logits = model({"source": np.array([[5, 6, 3]]),
    ...                 "target_in": np.array([[2, 7]])})  # (1, 2, 120)
    """
    for argument, value in (
        ("source_vocabulary_size", source_vocabulary_size),
        ("target_vocabulary_size", target_vocabulary_size),
        ("num_layers", num_layers),
        (
            "decoder_layers",
            num_layers if decoder_layers is None else decoder_layers,
        ),
        ("model_dim", model_dim),
        ("num_heads", num_heads),
        ("feed_forward_dim", feed_forward_dim),
        ("max_length", max_length),
    ):
        check_positive_int(argument, value)
    if model_dim % num_heads:
        raise ValueError(
            "`model_dim` must be a multiple of `num_heads`. Received: "
            f"model_dim={model_dim}, num_heads={num_heads}"
        )
    check_rate("dropout", dropout)
    if positions not in ("sinusoidal", "learned"):
        raise ValueError(
            "`positions` must be 'sinusoidal' or 'learned'. "
            f"Received: positions={positions!r}"
        )
    if not isinstance(tie_embeddings, bool):
        raise ValueError(
            "`tie_embeddings` must be a bool. "
            f"Received: tie_embeddings={tie_embeddings!r}"
        )
    block_args = dict(
        num_heads=num_heads,
        key_dim=model_dim // num_heads,
        feed_forward_dim=feed_forward_dim,
        dropout=dropout,
        layer_norm_epsilon=_LAYER_NORM_EPSILON,
        num_key_value_heads=num_key_value_heads,
        sliding_window=sliding_window,
        use_gate=use_gate,
        attention_dropout=attention_dropout,
    )

    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    source_mask = ops.not_equal(source, 0)  # (B, Ts)
    target_mask = ops.not_equal(target_in, 0)  # (B, Tt)

    x = PositionalEmbedding(
        source_vocabulary_size,
        model_dim,
        max_length,
        positions=positions,
        name="source_embedding",
    )(source)
    x = keras.layers.Dropout(dropout, name="source_dropout")(x)
    for i in range(num_layers):
        x = TransformerEncoderBlock(**block_args, name=f"encoder_{i}")(
            x, mask=source_mask
        )
    memory = keras.layers.LayerNormalization(
        epsilon=_LAYER_NORM_EPSILON, name="encoder_norm"
    )(x)  # (B, Ts, D)

    target_embedding = PositionalEmbedding(
        target_vocabulary_size,
        model_dim,
        max_length,
        positions=positions,
        name="target_embedding",
    )
    y = target_embedding(target_in)
    y = keras.layers.Dropout(dropout, name="target_dropout")(y)
    if decoder_layers is None:
        decoder_layers = num_layers
    for i in range(decoder_layers):
        y = TransformerDecoderBlock(**block_args, name=f"decoder_{i}")(
            y, memory, decoder_mask=target_mask, encoder_mask=source_mask
        )
    y = keras.layers.LayerNormalization(
        epsilon=_LAYER_NORM_EPSILON, name="decoder_norm"
    )(y)  # (B, Tt, D)
    if tie_embeddings:
        scores = target_embedding(y, reverse=True)  # (B, Tt, V)
        logits = LogitsBias(dtype="float32", name="logits")(scores)
    else:
        logits = keras.layers.Dense(
            target_vocabulary_size, dtype="float32", name="logits"
        )(y)
    return keras.Model(
        {"source": source, "target_in": target_in}, logits, name=name
    )


class TransformerAdapter(TranslationAdapter):
    """Cached step-by-step decoding of a `build_transformer_translator` model.

    A `DecodingAdapter` (see `attention_zoo.decoding.decode`).
    `encode(source_ids)` runs the encoder once and projects every decoder
    block's cross-attention keys/values once; `initial_state(memory)`
    gives empty self-attention caches of `max_decode_length` steps;
    `step(token_ids, state, memory, index) -> (logits, state, attention)`
    embeds the previous token at position `index`, writes its keys/values
    into the caches at `index`, and returns float32 logits `(N, V)` and
    the last decoder block's cross-attention averaged over heads
    `(N, Ts)`. The steps use `keras.ops` only, so they run inside
    compiled `while_loop`s; dropout is off. Decoding gives the
    teacher-forced model's logits.

    Args:
        model: a model from `build_transformer_translator` (also after a
            `.keras` round trip).
        max_decode_length: int, cache size: the most steps decoded
            (`index < max_decode_length`). Defaults to `64`.
    """

    def __init__(self, model, max_decode_length=64):
        check_positive_int("max_decode_length", max_decode_length)
        self.model = model
        self.max_decode_length = max_decode_length
        layers = {layer.name: layer for layer in model.layers}
        encoders = decoders = 0
        while f"encoder_{encoders}" in layers:
            encoders += 1
        while f"decoder_{decoders}" in layers:
            decoders += 1
        if not decoders or "source_embedding" not in layers:
            raise ValueError(
                "`model` must come from `build_transformer_translator`. "
                f"Received: model with layers {sorted(layers)}"
            )
        self._source_embedding = layers["source_embedding"]
        self._encoders = [layers[f"encoder_{i}"] for i in range(encoders)]
        self._encoder_norm = layers["encoder_norm"]
        self._target_embedding = layers["target_embedding"]
        self._decoders = [layers[f"decoder_{i}"] for i in range(decoders)]
        self._decoder_norm = layers["decoder_norm"]
        self._logits = layers["logits"]
        self._tied = isinstance(self._logits, LogitsBias)
        embedding = self._target_embedding
        if (
            embedding.positions == "learned"
            and max_decode_length > embedding.max_length
        ):
            raise ValueError(
                "`max_decode_length` must not exceed the model's learned "
                f"positions ({embedding.max_length}). Received: "
                f"max_decode_length={max_decode_length}"
            )

    def encode(self, source_ids):
        """Source ids `(B, Ts)` -> memory dict (batch-leading tensors).

        Keys: `encoder_outputs` `(B, Ts, D)`, `source_mask` bool
        `(B, Ts)`, `cross_attention_caches` (one `(B, 2, Ts, K, Dk)` per
        decoder block, `K` key/value heads).
        """
        source_ids = ops.cast(source_ids, "int32")
        mask = ops.not_equal(source_ids, 0)  # (B, Ts)
        x = self._source_embedding(source_ids)
        for block in self._encoders:
            x = block(x, mask=mask, training=False)
        x = self._encoder_norm(x)  # (B, Ts, D)
        caches = tuple(
            block.compute_cross_attention_cache(x) for block in self._decoders
        )
        return {
            "encoder_outputs": x,
            "source_mask": mask,
            "cross_attention_caches": caches,
        }

    def initial_state(self, memory):
        """Empty self-attention caches, one `(B, 2, Tmax, K, Dk)` per block."""
        batch_size = ops.shape(memory["source_mask"])[0]
        return {
            "self_attention_caches": tuple(
                block.get_initial_cache(batch_size, self.max_decode_length)
                for block in self._decoders
            )
        }

    def step(self, token_ids, state, memory, index):
        """One target token for `N` rows (`memory` tiled for beams)."""
        last = len(self._decoders) - 1
        ids = ops.expand_dims(ops.cast(token_ids, "int32"), 1)  # (N, 1)
        y = self._target_embedding(ids, start_index=index)  # (N, 1, D)
        caches = []
        for i, block in enumerate(self._decoders):
            outputs = block(
                y,
                memory["encoder_outputs"],
                encoder_mask=memory["source_mask"],
                self_attention_cache=state["self_attention_caches"][i],
                cross_attention_cache=memory["cross_attention_caches"][i],
                cache_update_index=index,
                return_attention_scores=i == last,
                training=False,
            )
            y, cache = outputs[0], outputs[-1]
            caches.append(cache)
            if i == last:
                weights = outputs[1]  # (N, H, 1, Ts)
        y = self._decoder_norm(y)
        if self._tied:
            y = self._target_embedding(y, reverse=True)
        logits = ops.cast(self._logits(y)[:, 0], "float32")  # (N, V)
        attention = ops.mean(ops.cast(weights, "float32"), axis=1)
        attention = attention[:, 0]  # (N, Ts)
        return logits, {"self_attention_caches": tuple(caches)}, attention


def make_transformer_adapter(model, max_decode_length=64):
    """The decoding adapter of a `build_transformer_translator` model.

    Args:
        model: a `keras.Model` from `build_transformer_translator`.
        max_decode_length: int, the most steps decoded (cache size).
            Defaults to `64`.

    Returns:
        A `TransformerAdapter` (a `DecodingAdapter`).
    """
    return TransformerAdapter(model, max_decode_length)
