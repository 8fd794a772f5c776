"""Loading an export's signatures, in process."""

from attention_zoo.export.versions import resolve_version


def load_signature(directory, name="serving_default"):
    """The signature `name` of the export in `directory`.

    `directory` is a version folder or a folder of numbered versions (the
    newest is loaded, see `resolve_version`). TensorFlow Text's ops are
    registered first, for exports whose graph tokenizes text.

    Example:

    ```python
    serve = load_signature("saved_models/<app>")  # the newest version
    outputs = serve(**inputs)  # dict of tensors
    ```
    """
    return load_signatures(directory)[name]


def load_signatures(directory):
    """Every signature of the export in `directory` (see `load_signature`),
    a mapping name -> callable, loaded once."""
    # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops in-process)

    return tf.saved_model.load(resolve_version(directory)).signatures
