"""Translation: seq2seq with attention, from a Keras script to a SavedModel.

Builders (`rnn_model.build_rnn_translator`,
`transformer_model.build_transformer_translator`), the
`translator.Translator` that bundles tokenizers, model and compiled
search, data loaders (`data`), the synthetic language pair (`synthetic`)
and the export (`export.TranslationServingModule`, which
`Translator.export` writes). The package itself holds
only `APPLICATION`, so that reading it does not start TensorFlow;
`Translator` and `TranslationConfig`, which README documented here, are
the descriptor's bundle and config classes, imported when first read
(`__getattr__`).
"""

from attention_zoo_apps.application import Application


def __getattr__(name):
    if name == "Translator":
        return APPLICATION.bundle_class()
    if name == "TranslationConfig":
        return APPLICATION.config_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
