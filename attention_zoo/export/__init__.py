"""SavedModels in TF Serving's layout: `saved_models/<app>/<version>/`.

- Writing: `save_export` writes a `ServingModule` (named signatures,
  tracked state, assets) with its bundle's files and `metadata.json` into
  a version folder, atomically (`atomic_directory`); `next_version` is
  the next free number.
- Precision: `export_precision(model, "int8")` makes the large `Dense`
  layers oneDNN int8 matmuls while an export is traced (`int8`);
  `check_model_precision` refuses a model with none (`NothingToQuantize`)
  and a CPU that cannot run the int8 op (`Int8Unavailable`).
  `batch_norm_folding.folded_batch_norms(model)` folds each convolution's
  batch normalization into it while an export is traced.
- Warm-up: `write_warmup_requests` writes the requests TF Serving replays
  when it loads a version (`WARMUP_FILE` in the version folder, at most
  `MAX_WARMUP_RECORDS`; `save_export` writes them with the export),
  `read_warmup_requests` reads them back.
- Reading: `resolve_version` finds the newest version, `load_signature`
  loads one signature in process (`load_signatures` all of them),
  `read_metadata` reads what an export
  is, `read_model_weights` puts the exported weights back into a Keras
  model built from the export's config (to fine-tune it).
- Serving: `predict_request` answers TF Serving's REST `predict` bodies
  with a loaded export, in process.

Importing this package does not import TensorFlow (its functions import
it when called); `serving_module.ServingModule` and `rest.predict_request`,
whose modules need it at import time, are imported from those modules.
"""

from attention_zoo.export.atomic import atomic_directory
from attention_zoo.export.atomic import next_version
from attention_zoo.export.int8 import EXPORT_PRECISIONS
from attention_zoo.export.int8 import Int8Unavailable
from attention_zoo.export.int8 import NothingToQuantize
from attention_zoo.export.int8 import check_export_precision
from attention_zoo.export.int8 import check_model_precision
from attention_zoo.export.int8 import export_precision
from attention_zoo.export.loading import load_signature
from attention_zoo.export.loading import load_signatures
from attention_zoo.export.metadata import METADATA_FILE
from attention_zoo.export.metadata import data_fingerprint
from attention_zoo.export.metadata import file_sha256
from attention_zoo.export.metadata import read_metadata
from attention_zoo.export.metadata import resolve_jit_compile
from attention_zoo.export.metadata import write_metadata
from attention_zoo.export.model_weights import exported_weights
from attention_zoo.export.model_weights import read_model_weights
from attention_zoo.export.saving import save_export
from attention_zoo.export.versions import resolve_version
from attention_zoo.export.warmup import MAX_WARMUP_RECORDS
from attention_zoo.export.warmup import WARMUP_FILE
from attention_zoo.export.warmup import read_warmup_requests
from attention_zoo.export.warmup import write_warmup_requests

__all__ = [
    "EXPORT_PRECISIONS",
    "MAX_WARMUP_RECORDS",
    "METADATA_FILE",
    "WARMUP_FILE",
    "Int8Unavailable",
    "NothingToQuantize",
    "atomic_directory",
    "check_export_precision",
    "check_model_precision",
    "data_fingerprint",
    "export_precision",
    "exported_weights",
    "file_sha256",
    "load_signature",
    "load_signatures",
    "next_version",
    "read_metadata",
    "read_model_weights",
    "read_warmup_requests",
    "resolve_jit_compile",
    "resolve_version",
    "save_export",
    "write_metadata",
    "write_warmup_requests",
]
