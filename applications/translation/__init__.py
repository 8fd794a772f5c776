"""Translation: seq2seq with attention, from a Keras script to a SavedModel.

Builders (`build_rnn_translator`, `build_transformer_translator`), the
`Translator` that bundles tokenizers, model and compiled decoding, data
loaders and the synthetic language pair (`data`), and the export.
"""

from applications.translation import data
from applications.translation.config import TranslationConfig
from applications.translation.export import export_translation
from applications.translation.rnn_model import build_rnn_translator
from applications.translation.rnn_model import make_rnn_decoder
from applications.translation.transformer_model import (
    build_transformer_translator,
)
from applications.translation.transformer_model import make_transformer_decoder
from applications.translation.translator import Translator

__all__ = [
    "TranslationConfig",
    "Translator",
    "build_rnn_translator",
    "build_transformer_translator",
    "data",
    "export_translation",
    "make_rnn_decoder",
    "make_transformer_decoder",
]
