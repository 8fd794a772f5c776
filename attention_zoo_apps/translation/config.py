"""`TranslationConfig`: the one place to read what a translation run does."""

import dataclasses

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo_apps.common.config import AppConfig
from attention_zoo_apps.translation.options import ATTENTIONS
from attention_zoo_apps.translation.options import MODELS
from attention_zoo_apps.translation.options import PLACEHOLDER_RULES
from attention_zoo_apps.translation.options import SCHEDULES


@dataclasses.dataclass(frozen=True)
class TranslationConfig(AppConfig):
    """Every setting of a translation model and its training run.

    The defaults are the plain baseline; `attention-zoo train translation
    --model transformer` trains with the recipe instead (`train.RECIPE`).
    """

    # Which model: "rnn" (encoder-decoder of the seeds) or "transformer".
    model: str = "rnn"
    # RNN: attention score ("additive", "general", "dot", "scaled_dot"),
    # "monotonic" (Raffel et al.), "local" (Luong's local-p, window 8) or
    # None for the no-attention bottleneck baseline.
    attention: str | None = "additive"
    cell: str = "gru"  # RNN cell: "gru" or "lstm"
    embedding_dim: int = 256
    units: int = 512  # RNN decoder width (encoder: units per direction)
    encoder_layers: int = 1
    bidirectional: bool = True
    # Transformer.
    num_layers: int = 2
    # The decoder's blocks, when fewer than the encoder's (a shallow
    # decoder: each decoding step runs these; None: `num_layers`).
    decoder_layers: int | None = None
    model_dim: int = 256
    num_heads: int = 4
    feed_forward_dim: int = 1024
    positions: str = "sinusoidal"  # or "learned"
    tie_embeddings: bool = False
    # Grouped-query attention (None: one key/value head per head; 1:
    # multi-query), a self-attention window in steps (None: all) and an
    # output gate on every attention (`TransformerEncoderBlock`).
    num_key_value_heads: int | None = None
    sliding_window: int | None = None
    use_gate: bool = False
    dropout: float = 0.1
    # The Transformer's dropout on its attention weights.
    attention_dropout: float = 0.0
    # Text: WordPiece vocabularies learned from the training pairs.
    source_vocabulary_size: int = 8000
    target_vocabulary_size: int = 8000
    # One vocabulary learned from both sides' text, for both (its size
    # the source's; `target_vocabulary_size` must equal it).
    joint_vocabulary: bool = False
    # Real text keeps its case (BLEU is scored cased); True lower-cases
    # the vocabularies and so the output (configs saved before this
    # default changed say `true`).
    lowercase: bool = False
    normalization: str | None = "NFKC"
    # Source words copied into the translation through placeholder
    # tokens, by these rules of `PLACEHOLDER_RULES` ("numbers", "names",
    # "unknown"; see `translation.placeholders`); () copies nothing.
    placeholders: tuple = ()
    # Longest sequence in tokens (sources are truncated to it, decoding
    # stops at it).
    max_length: int = 64
    # Training.
    batch_size: int = 64
    epochs: int = 10
    learning_rate: float = 1e-3
    # "constant" (`learning_rate` throughout) or "inverse_sqrt": a linear
    # warm-up to `learning_rate` over `warmup_steps` updates, then decay
    # with the inverse square root of the updates (`WarmupInverseSqrt`).
    learning_rate_schedule: str = "constant"
    warmup_steps: int = 4000
    # The share of each target token's probability smoothed towards the
    # uniform distribution (`SmoothedSparseCrossentropy`; 0: none).
    label_smoothing: float = 0.0
    # Evaluate and export the mean weights of the last N epochs
    # (`common.weight_averaging`; 1: the last epoch's).
    average_checkpoints: int = 1
    seed: int = 0
    # A Keras dtype policy: "float32", "mixed_bfloat16" or "mixed_float16"
    # (`attention_zoo_apps.common.precision`; configs saved without it:
    # float32).
    precision: str = "float32"

    def __post_init__(self):
        self.check_precision()
        check_choice("model", self.model, MODELS)
        check_choice("attention", self.attention, ATTENTIONS)
        check_choice(
            "learning_rate_schedule", self.learning_rate_schedule, SCHEDULES
        )
        self.check_positive_ints(
            (
                "embedding_dim",
                "units",
                "encoder_layers",
                "num_layers",
                "model_dim",
                "num_heads",
                "feed_forward_dim",
                "source_vocabulary_size",
                "target_vocabulary_size",
                "max_length",
                "batch_size",
                "epochs",
                "warmup_steps",
                "average_checkpoints",
            )
        )
        check_rate("label_smoothing", self.label_smoothing)
        # A list when read from JSON.
        object.__setattr__(self, "placeholders", tuple(self.placeholders))
        for rule in self.placeholders:
            check_choice("placeholders", rule, PLACEHOLDER_RULES)
        if len(set(self.placeholders)) != len(self.placeholders):
            raise ValueError(
                "`placeholders` must name each rule once. "
                f"Received: placeholders={self.placeholders!r}"
            )
        for name in ("num_key_value_heads", "sliding_window", "decoder_layers"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        check_rate("dropout", self.dropout)
        check_rate("attention_dropout", self.attention_dropout)
        sizes = (self.source_vocabulary_size, self.target_vocabulary_size)
        if self.joint_vocabulary and sizes[0] != sizes[1]:
            raise ValueError(
                "A `joint_vocabulary` has one size: `source_vocabulary_size` "
                "and `target_vocabulary_size` must be equal. Received: "
                f"{sizes[0]} and {sizes[1]}"
            )
        if self.tie_embeddings and self.model != "transformer":
            raise ValueError(
                "`tie_embeddings` needs `model='transformer'` (the RNN's "
                "logits layer reads its attentional state, not an "
                f"embedding). Received: model={self.model!r}"
            )
        if self.decoder_layers is not None and self.model != "transformer":
            raise ValueError(
                "`decoder_layers` needs `model='transformer'` (the RNN "
                f"decodes with one cell). Received: model={self.model!r}"
            )
        if self.attention_dropout and self.model != "transformer":
            raise ValueError(
                "`attention_dropout` needs `model='transformer'` (the "
                "RNN's attention has no dropout). Received: "
                f"model={self.model!r}"
            )
        if self.model_dim % self.num_heads:
            raise ValueError(
                "`model_dim` must be a multiple of `num_heads`. Received: "
                f"model_dim={self.model_dim}, num_heads={self.num_heads}"
            )
        heads = self.num_key_value_heads
        if heads is not None and self.num_heads % heads:
            raise ValueError(
                "`num_heads` must be a multiple of `num_key_value_heads`. "
                f"Received: num_heads={self.num_heads}, "
                f"num_key_value_heads={heads}"
            )
