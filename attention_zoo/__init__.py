"""attention-zoo: attention mechanisms for Keras 3 (TensorFlow and JAX)."""

from attention_zoo import blocks
from attention_zoo import layers
from attention_zoo.layers.multi_head import MultiHead

__version__ = "0.1.0"

__all__ = [
    "MultiHead",
    "blocks",
    "layers",
]
