"""`WarmupInverseSqrt`: the Transformer's learning-rate schedule (Vaswani
et al. 2017), the schedule of `attention-zoo train translation
--learning-rate-schedule inverse_sqrt`."""

import keras
from keras import ops

from attention_zoo.checks import check_positive_int


@keras.saving.register_keras_serializable(package="attention_zoo_apps")
class WarmupInverseSqrt(keras.optimizers.schedules.LearningRateSchedule):
    """A linear warm-up to `peak` over `warmup_steps` updates, then decay
    with the inverse square root of the update count:

        rate(n) = peak * min(n / warmup_steps, sqrt(warmup_steps / n))

    for the `n`-th update (`n = step + 1`: Keras passes the optimizer's
    iterations, 0 at the first update). It is Vaswani et al.'s
    `d_model^-0.5 * min(n^-0.5, n * warmup^-1.5)` with the peak given
    directly, as fairseq's `inverse_sqrt` and OpenNMT-tf's `NoamDecay`
    with a scale do.

    Args:
        peak: float, the rate after `warmup_steps` updates.
        warmup_steps: int, the updates of the warm-up.

    Example:

    >>> schedule = WarmupInverseSqrt(1e-3, warmup_steps=4)
    >>> tuple(round(float(schedule(step)), 6) for step in (0, 3, 15))
    (0.00025, 0.001, 0.0005)
    """

    def __init__(self, peak, warmup_steps):
        if isinstance(peak, bool) or not (
            isinstance(peak, (int, float)) and peak > 0
        ):
            raise ValueError(
                f"`peak` must be a positive number. Received: peak={peak!r}"
            )
        check_positive_int("warmup_steps", warmup_steps)
        self.peak = peak
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        updates = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        return self.peak * ops.minimum(
            updates / warmup, ops.sqrt(warmup / updates)
        )

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}
