"""Image captioning with spatial attention (show, attend and tell)."""

from attention_zoo_apps.application import Application

APPLICATION = Application(
    name="captioning",
    package=__name__,
    bundle="captioner:Captioner",
    infer_command="caption",
    infer_help="caption images with a captioning export",
    export_inputs=("image",),
    # A captioner of 32 px generated shapes.
    tiny_settings=dict(
        image_size=32,
        embedding_dim=8,
        units=16,
        vocabulary_size=100,
        max_length=9,
        batch_size=16,
        epochs=1,
    ),
)
