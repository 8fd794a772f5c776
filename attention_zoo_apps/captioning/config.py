"""`CaptioningConfig`: the one place to read what a captioning run does."""

import dataclasses

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_positive_int
from attention_zoo_apps.captioning.option_checks import check_attention_mode
from attention_zoo_apps.captioning.option_checks import check_hard_options
from attention_zoo_apps.captioning.option_checks import check_prediction
from attention_zoo_apps.captioning.options import ATTENTIONS
from attention_zoo_apps.captioning.options import QUERIES
from attention_zoo_apps.common.config import AppConfig


@dataclasses.dataclass(frozen=True)
class CaptioningConfig(AppConfig):
    """Every setting of a captioning model and its training run."""

    # Model (`build_captioner`).
    # "small_cnn", "efficientnet_lite0" or a keras.applications name.
    encoder: str = "small_cnn"
    image_size: int = 64
    embedding_dim: int = 256
    units: int = 512
    attention: str | None = "additive"  # None: the mean-feature baseline
    dropout: float = 0.3
    attention_regularization: float = 1.0
    # What the decoder queries the image with: the paper's "state" or
    # "state_and_word" (`AttentionLSTMDecoder`'s `query`).
    attention_query: str = "state"
    # How words are predicted: the paper's "deep" output from the soft
    # context, or "latent" (`AttentionLSTMDecoder`'s `prediction`).
    prediction: str = "deep"
    # "soft" (the weighted mean of the grid) or "hard": one cell per word,
    # sampled in training and learned by REINFORCE (Xu et al. 2015,
    # `AttentionLSTMDecoder`'s `attention_mode`; configs saved without
    # it: soft). At inference hard attention reads the most likely cell
    # ("argmax") or the expectation (`hard_inference`).
    attention_mode: str = "soft"
    hard_inference: str = "argmax"
    # REINFORCE's `lambda_r` and the entropy bonus's `lambda_e` (hard
    # attention; the authors' code's 1/10 and 0.002).
    reinforce_weight: float = 0.1
    entropy_weight: float = 0.002
    # Hard attention's "semi-sampling" (Xu et al. 2015, Section 4.1): the
    # probability that an image reads the expectation in a training step
    # instead of sampled cells (the paper's 0.5; 0 samples always).
    semi_sampling: float = 0.0
    # None: frozen when `encoder_weights` are given (pretrained), else
    # trained (`model.encoder_is_trainable`).
    trainable_encoder: bool | None = None
    # None (random), "imagenet" (efficientnet_lite0) or a weights file.
    encoder_weights: str | None = None
    # efficientnet_lite0's feature grid: None, the head (7 x 7 x 1280 at
    # 224 px), or a stage's output (5: 14 x 14 x 112).
    encoder_stage: int | None = None
    # Text: a WordPiece vocabulary learned from the training captions.
    vocabulary_size: int = 5000
    lowercase: bool = True
    max_length: int = 20  # caption tokens, END included
    # Training.
    batch_size: int = 32
    epochs: int = 10
    learning_rate: float = 1e-3
    # Random crops (each side 80-100%) and mirror images of the training
    # images (`attention_zoo_apps.captioning.augment`): for photographs; the
    # generated shapes' captions say left and right, so off by default.
    augment: bool = False
    seed: int = 0
    # A Keras dtype policy: "float32", "mixed_bfloat16" or "mixed_float16"
    # (`attention_zoo_apps.common.precision`; configs saved without it:
    # float32).
    precision: str = "float32"

    def __post_init__(self):
        self.check_precision()
        self.check_positive_ints(
            (
                "image_size",
                "embedding_dim",
                "units",
                "vocabulary_size",
                "max_length",
                "batch_size",
                "epochs",
            )
        )
        check_choice("attention", self.attention, ATTENTIONS)
        check_choice("attention_query", self.attention_query, QUERIES)
        check_prediction(self.prediction, self.attention)
        check_attention_mode(self.attention_mode, self.attention)
        check_hard_options(
            self.hard_inference,
            self.reinforce_weight,
            self.entropy_weight,
            self.semi_sampling,
        )
        if self.encoder_stage is not None:
            check_positive_int("encoder_stage", self.encoder_stage)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(
                f"`dropout` must be in [0, 1). Received: dropout={self.dropout}"
            )
