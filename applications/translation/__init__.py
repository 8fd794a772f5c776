"""Translation: seq2seq with attention, from a Keras script to a SavedModel.

Builders (`build_rnn_translator`, `build_transformer_translator`), the
`Translator` that bundles tokenizers, model and compiled decoding, data
loaders (`data`), the synthetic language pair (`synthetic`) and the
export. The names below are imported when first used, so that importing
the package (`APPLICATION`) does not start TensorFlow.
"""

import importlib

from applications.application import Application

APPLICATION = Application(
    name="translation",
    package=__name__,
    bundle="translator:Translator",
    infer_command="translate",
    infer_help="translate texts with a translation export",
    export_inputs=("text",),
    # An RNN translator (the default model).
    tiny_settings=dict(
        embedding_dim=16,
        units=24,
        source_vocabulary_size=200,
        target_vocabulary_size=200,
        max_length=12,
        batch_size=32,
        epochs=1,
    ),
)

# Public name -> the module defining it (None: the submodule itself).
_EXPORTS = {
    "TranslationConfig": "config",
    "Translator": "translator",
    "build_rnn_translator": "rnn_model",
    "build_transformer_translator": "transformer_model",
    "data": None,
    "export_translation": "export",
    "make_rnn_decoder": "rnn_model",
    "make_transformer_decoder": "transformer_model",
}

__all__ = ["APPLICATION", *_EXPORTS]


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _EXPORTS[name]
    if module is None:
        return importlib.import_module(f"{__name__}.{name}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
