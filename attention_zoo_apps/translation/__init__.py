"""Translation: seq2seq with attention, from a Keras script to a SavedModel.

Builders (`rnn_model.build_rnn_translator`,
`transformer_model.build_transformer_translator`), the
`translator.Translator` that bundles tokenizers, model and compiled
search, data loaders (`data`), the synthetic language pair (`synthetic`)
and the export (`export.TranslationServingModule`, which
`Translator.export` writes). The package itself holds
only `APPLICATION`, so that reading it does not start TensorFlow;
`Translator` and `TranslationConfig`, which README documented here, are
imported from their modules when first read (`__getattr__`).
"""

import importlib

from attention_zoo_apps.application import Application

_MODULE_OF = {"Translator": "translator", "TranslationConfig": "config"}


def __getattr__(name):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_MODULE_OF[name]}")
    return getattr(module, name)


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
