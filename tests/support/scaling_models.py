"""Tiny SavedModels `y = factor * x`, whose answers say which version
gave them (the version and fault tests): the fault benchmark's models."""

from benchmarks.serving_faults import save_scaling_model

__all__ = ["save_scaling_model"]
