"""Finding the SavedModel to serve in a folder of numbered versions, and
loading its signature."""

import os


def resolve_version(directory):
    """`directory` itself if it is a SavedModel, else its newest version."""
    if os.path.exists(os.path.join(directory, "saved_model.pb")):
        return directory
    versions = (
        sorted(
            (int(name) for name in os.listdir(directory) if name.isdigit()),
        )
        if os.path.isdir(directory)
        else []
    )
    if not versions:
        raise FileNotFoundError(
            f"No SavedModel in {directory!r} (no saved_model.pb and no "
            "numbered version folders)"
        )
    return os.path.join(directory, str(versions[-1]))


def load_signature(directory, name="serving_default"):
    """Loads the SavedModel of `resolve_version(directory)` with
    TensorFlow Text's ops registered in-process; returns the signature."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops in-process)

    return tf.saved_model.load(resolve_version(directory)).signatures[name]
