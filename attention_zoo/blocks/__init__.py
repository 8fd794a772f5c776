"""Small compositions of layers: residual stacks, dilated-conv networks."""

__all__ = []
