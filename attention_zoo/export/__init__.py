"""Helpers for writing SavedModels into `saved_models/<app>/<version>/`."""

from attention_zoo.export.atomic import atomic_directory
from attention_zoo.export.atomic import next_version
from attention_zoo.export.metadata import METADATA_FILE
from attention_zoo.export.metadata import data_fingerprint
from attention_zoo.export.metadata import file_sha256
from attention_zoo.export.metadata import read_metadata
from attention_zoo.export.metadata import resolve_jit_compile
from attention_zoo.export.metadata import write_metadata

__all__ = [
    "METADATA_FILE",
    "atomic_directory",
    "data_fingerprint",
    "file_sha256",
    "next_version",
    "read_metadata",
    "resolve_jit_compile",
    "write_metadata",
]
