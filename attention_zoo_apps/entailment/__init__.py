"""Textual entailment with decomposable attention (Parikh et al., 2016)."""

from attention_zoo_apps.application import Application

APPLICATION = Application(
    name="entailment",
    package=__name__,
    bundle="classifier:EntailmentClassifier",
    infer_command="predict",
    infer_help="classify premise / hypothesis pairs with an entailment export",
    export_inputs=("premise", "hypothesis"),
    # Decomposable attention without intra-sentence attention.
    tiny_settings=dict(
        embedding_dim=12,
        hidden_units=10,
        vocabulary_size=300,
        max_length=16,
        batch_size=32,
        epochs=1,
    ),
)
