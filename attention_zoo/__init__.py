"""attention-zoo: attention mechanisms for Keras 3 (TensorFlow and JAX)."""

from attention_zoo import blocks
from attention_zoo import layers

__version__ = "0.1.0"

__all__ = [
    "blocks",
    "layers",
]
