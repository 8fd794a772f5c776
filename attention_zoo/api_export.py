"""The one decorator that makes a class public and serializable."""

import keras

# Public name -> class, for the registration test and the API listing.
EXPORTED = {}


def attention_zoo_export(path):
    """Records the public name(s) of a class and registers it with Keras.

    Args:
        path: str or tuple of str, the public dotted name(s), e.g.
            `"attention_zoo.layers.AdditiveAttention"`.

    Returns:
        A class decorator. The class is registered as
        `"attention_zoo>ClassName"` for `keras.saving`.
    """
    paths = (path,) if isinstance(path, str) else tuple(path)

    def decorator(cls):
        cls = keras.saving.register_keras_serializable(
            package="attention_zoo", name=cls.__name__
        )(cls)
        for name in paths:
            EXPORTED[name] = cls
        return cls

    return decorator
