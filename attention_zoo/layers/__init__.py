"""Attention and causal convolution layers, one mechanism per module."""

from attention_zoo.layers.multi_head import MultiHead

__all__ = [
    "MultiHead",
]
