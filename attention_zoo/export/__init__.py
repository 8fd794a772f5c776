"""Helpers for writing SavedModels into `saved_models/<app>/<version>/`."""

from attention_zoo.export.atomic import atomic_directory
from attention_zoo.export.atomic import next_version

__all__ = ["atomic_directory", "next_version"]
