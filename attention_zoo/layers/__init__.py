"""Attention and causal convolution layers, one mechanism per module."""

from attention_zoo.layers.causal_dilated_conv1d import CausalDilatedConv1D
from attention_zoo.layers.multi_head import MultiHead

__all__ = [
    "MultiHead",
    "CausalDilatedConv1D",
]
