"""Attention and causal convolution layers, one mechanism per module."""

__all__ = []
