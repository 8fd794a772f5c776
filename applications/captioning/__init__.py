"""Image captioning with spatial attention (show, attend and tell)."""
