"""`build_translation_model(config)`: the configured translator and decoder."""

from attention_zoo_apps.translation.rnn_model import build_rnn_translator
from attention_zoo_apps.translation.rnn_model import make_rnn_adapter
from attention_zoo_apps.translation.transformer_model import (
    build_transformer_translator,
)
from attention_zoo_apps.translation.transformer_model import (
    make_transformer_adapter,
)


def build_translation_model(
    config, source_vocabulary_size, target_vocabulary_size
):
    """The `keras.Model` named by `config.model`.

    Inputs `{"source": (B, Ts), "target_in": (B, Tt)}` int32 ids (0 is
    padding), output float32 logits `(B, Tt, target_vocabulary_size)`.
    """
    if config.model == "rnn":
        return build_rnn_translator(
            source_vocabulary_size,
            target_vocabulary_size,
            attention=config.attention,
            cell=config.cell,
            embedding_dim=config.embedding_dim,
            units=config.units,
            encoder_layers=config.encoder_layers,
            bidirectional=config.bidirectional,
            dropout=config.dropout,
        )
    return build_transformer_translator(
        source_vocabulary_size,
        target_vocabulary_size,
        num_layers=config.num_layers,
        decoder_layers=config.decoder_layers,
        model_dim=config.model_dim,
        num_heads=config.num_heads,
        feed_forward_dim=config.feed_forward_dim,
        dropout=config.dropout,
        positions=config.positions,
        max_length=config.max_length + 2,  # START/END around the text
        tie_embeddings=config.tie_embeddings,
        num_key_value_heads=config.num_key_value_heads,
        sliding_window=config.sliding_window,
        use_gate=config.use_gate,
        attention_dropout=config.attention_dropout,
    )


def model_adapter(model, config):
    """The model's `DecodingAdapter` (see `attention_zoo.decoding`), with
    room for the `config.max_length + 1` tokens a translation has."""
    if config.model == "rnn":
        return make_rnn_adapter(model)
    return make_transformer_adapter(
        model, max_decode_length=config.max_length + 1
    )
