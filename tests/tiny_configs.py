"""The smallest application configs the tests train: one definition per
application, each test `.replace(...)`s what it needs."""

from applications.captioning.config import CaptioningConfig
from applications.ehr.config import EHRConfig
from applications.entailment.config import EntailmentConfig
from applications.translation.config import TranslationConfig

# An RNN translator (the default model).
TINY_TRANSLATION = TranslationConfig(
    embedding_dim=16,
    units=24,
    source_vocabulary_size=200,
    target_vocabulary_size=200,
    max_length=12,
    batch_size=32,
    epochs=1,
)

# Decomposable attention without intra-sentence attention.
TINY_ENTAILMENT = EntailmentConfig(
    embedding_dim=12,
    hidden_units=10,
    vocabulary_size=300,
    max_length=16,
    batch_size=32,
    epochs=1,
)

# A captioner of 32 px generated shapes.
TINY_CAPTIONING = CaptioningConfig(
    image_size=32,
    embedding_dim=8,
    units=16,
    vocabulary_size=100,
    max_length=9,
    batch_size=16,
    epochs=1,
)

# A multihead EHR model with notes, a few thousand parameters.
TINY_EHR = EHRConfig(
    embedding_dim=8,
    units=8,
    encoder="multihead",
    num_heads=2,
    note_vocabulary_size=200,
    note_min_count=1,
    batch_size=16,
    epochs=1,
)

# Application -> its tiny config.
TINY_CONFIGS = {
    "translation": TINY_TRANSLATION,
    "entailment": TINY_ENTAILMENT,
    "captioning": TINY_CAPTIONING,
    "ehr": TINY_EHR,
}
