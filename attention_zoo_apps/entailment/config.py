"""`EntailmentConfig`: the one place to read what an entailment run does."""

import dataclasses

from attention_zoo_apps.common.config import AppConfig


@dataclasses.dataclass(frozen=True)
class EntailmentConfig(AppConfig):
    """Every setting of an entailment model and its training run."""

    # Model (`build_decomposable_attention`).
    embedding_dim: int = 300
    hidden_units: int = 200
    intra_attention: bool = False
    attention: bool = True  # False: the no-attention baseline
    dropout: float = 0.2
    max_distance: int = 10
    trainable_embeddings: bool = True
    # Text: one WordPiece vocabulary for premises and hypotheses.
    vocabulary_size: int = 16000
    # Tokens seen fewer times become pieces; words must stay whole for the
    # alignment (and to find pretrained vectors), so keep rare ones too.
    min_token_count: int = 2
    lowercase: bool = True
    normalization: str | None = "NFKC"
    max_length: int = 64  # tokens kept per sentence
    # Training.
    batch_size: int = 32
    epochs: int = 10
    learning_rate: float = 1e-3
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
                "hidden_units",
                "max_distance",
                "vocabulary_size",
                "min_token_count",
                "max_length",
                "batch_size",
                "epochs",
            )
        )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(
                f"`dropout` must be in [0, 1). Received: dropout={self.dropout}"
            )
        if self.intra_attention and not self.attention:
            raise ValueError(
                "`intra_attention=True` needs `attention=True` (the baseline "
                "has no attention at all)."
            )
