"""The smallest application configs the tests train: one definition, each
test `.replace(...)`s what it needs."""

from applications.ehr.config import EHRConfig

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
