"""experiments.fine_tuning: the learning rate a fine-tuned side trains at."""

from attention_zoo_apps.entailment.config import EntailmentConfig
from attention_zoo_apps.translation.config import TranslationConfig
from experiments.fine_tuning import _at_rate


def test_a_transformer_warms_up_over_one_epoch_of_the_new_data():
    # The shipped Transformer's warm-up (1,000 updates) is longer than a
    # fine-tuning run on 2,000 pairs: 32 updates of 64 pairs per epoch.
    config = TranslationConfig(
        model="transformer",
        learning_rate_schedule="inverse_sqrt",
        warmup_steps=1000,
        batch_size=64,
    )
    tuned = _at_rate(config, 3e-4, 2000)
    assert tuned == config.replace(learning_rate=3e-4, warmup_steps=32)


def test_a_constant_rate_is_replaced_and_nothing_else():
    for config in (
        TranslationConfig(learning_rate_schedule="constant", warmup_steps=7),
        EntailmentConfig(),
    ):
        assert _at_rate(config, 3e-4, 2000) == config.replace(
            learning_rate=3e-4
        )
