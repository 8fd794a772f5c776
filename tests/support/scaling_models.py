"""Tiny SavedModels `y = factor * x`, whose answers say which version
gave them (the version and fault tests)."""


def save_scaling_model(path, factor):
    """A SavedModel `serving_default(x: float32 [None]) -> {"y": factor *
    x}`, written atomically (as `export` writes versions)."""
    import tensorflow as tf

    from attention_zoo.export import atomic_directory

    class Scaling(tf.Module):
        @tf.function(
            input_signature=[tf.TensorSpec([None], tf.float32, name="x")]
        )
        def serve(self, x):
            return {"y": x * factor}

    module = Scaling()
    with atomic_directory(path) as temporary:
        tf.saved_model.save(
            module, temporary, signatures={"serving_default": module.serve}
        )
    return path
