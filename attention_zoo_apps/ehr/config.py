"""`EHRConfig`: the one place to read what an EHR risk run does."""

import dataclasses

from attention_zoo.checks import check_choice
from attention_zoo_apps.common.config import AppConfig
from attention_zoo_apps.ehr.options import ENCODERS


@dataclasses.dataclass(frozen=True)
class EHRConfig(AppConfig):
    """Every setting of an EHR risk model and its training run."""

    # Model (`build_risk_model`).
    embedding_dim: int = 64
    units: int = 64
    encoder: str = "gru"  # or "multihead"
    num_heads: int = 4  # "multihead" only
    time_encoding: bool = True
    dropout: float = 0.2
    use_notes: bool = True  # False: events only, no note tokenizer
    # Records: the last `max_events` events before the prediction time and
    # the last `max_note_tokens` note tokens are kept.
    max_events: int = 256
    max_note_tokens: int = 256
    code_min_count: int = 1  # rarer codes map to OOV
    # Notes: a WordPiece vocabulary; rare words kept whole (for the
    # attention over words) down to `note_min_count` occurrences.
    note_vocabulary_size: int = 8000
    note_min_count: int = 2
    lowercase: bool = True
    # Training.
    batch_size: int = 32
    epochs: int = 10
    learning_rate: float = 1e-3
    class_weighting: bool = True  # balanced weights for the rare outcome
    seed: int = 0
    # A Keras dtype policy: "float32", "mixed_bfloat16" or "mixed_float16"
    # (`attention_zoo_apps.common.precision`; configs saved without it:
    # float32).
    precision: str = "float32"

    def __post_init__(self):
        self.check_precision()
        self.check_positive_ints(
            (
                "embedding_dim",
                "units",
                "num_heads",
                "max_events",
                "max_note_tokens",
                "code_min_count",
                "note_vocabulary_size",
                "note_min_count",
                "batch_size",
                "epochs",
            )
        )
        check_choice("encoder", self.encoder, ENCODERS)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(
                f"`dropout` must be in [0, 1). Received: dropout={self.dropout}"
            )
        if not self.learning_rate > 0:
            raise ValueError(
                "`learning_rate` must be positive. Received: "
                f"learning_rate={self.learning_rate}"
            )
