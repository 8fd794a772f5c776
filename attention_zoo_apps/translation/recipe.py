"""What `TranslationConfig`'s training options compile a translator
with: its loss (`label_smoothing`) and learning rate
(`learning_rate_schedule`)."""

import keras

from attention_zoo_apps.translation.label_smoothing import (
    SmoothedSparseCrossentropy,
)
from attention_zoo_apps.translation.schedules import WarmupInverseSqrt


def training_loss(config):
    """Keras's sparse cross-entropy of the logits, padding (id 0) left
    out; with `label_smoothing`, `SmoothedSparseCrossentropy`."""
    if config.label_smoothing:
        return SmoothedSparseCrossentropy(config.label_smoothing)
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0
    )


def learning_rate(config):
    """The config's `learning_rate`, or with `learning_rate_schedule
    ="inverse_sqrt"` a `WarmupInverseSqrt` that peaks at it."""
    if config.learning_rate_schedule == "inverse_sqrt":
        return WarmupInverseSqrt(config.learning_rate, config.warmup_steps)
    return config.learning_rate
