"""`SmoothedSparseCrossentropy`: cross-entropy with label smoothing for
integer targets, the loss of `attention-zoo train translation
--label-smoothing`."""

import keras
from keras import ops
from keras.src.backend import set_keras_mask

from attention_zoo.checks import check_rate


@keras.saving.register_keras_serializable(package="attention_zoo_apps")
class SmoothedSparseCrossentropy(keras.losses.Loss):
    """Cross-entropy of integer targets against logits, the target
    smoothed towards the uniform distribution (Szegedy et al. 2016, the
    `label_smoothing` of Keras's `CategoricalCrossentropy`): the target
    distribution is `(1 - smoothing) * one_hot(y) + smoothing / V`, so

        loss = (1 - smoothing) * -log p(y) + smoothing * mean_v -log p(v)

    over the `V` classes, computed from the log-softmax without the
    one-hot `(..., V)` tensor, in float32 (mixed-precision logits are
    cast first). Positions whose target is `ignore_class` count for
    nothing and the mean is over the others, as with Keras's
    `SparseCategoricalCrossentropy(ignore_class=...)`; `smoothing=0` is
    that loss.

    Args:
        smoothing: float in `[0, 1)`, the probability moved to the
            uniform distribution. Defaults to `0.1`.
        ignore_class: int or None, the target id of padding. Defaults
            to `0`.
        name: str. Defaults to `"smoothed_sparse_crossentropy"`.
        reduction: Keras's loss reduction. Defaults to
            `"sum_over_batch_size"`.

    Example:

    >>> import numpy as np
    >>> loss = SmoothedSparseCrossentropy(smoothing=0.1)
    >>> round(float(loss(np.array([[1, 0]]), np.zeros((1, 2, 4)))), 4)
    1.3863
    """

    def __init__(
        self,
        smoothing=0.1,
        ignore_class=0,
        name="smoothed_sparse_crossentropy",
        reduction="sum_over_batch_size",
        dtype=None,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        check_rate("smoothing", smoothing)
        self.smoothing = smoothing
        self.ignore_class = ignore_class

    def call(self, y_true, y_pred):
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)
        targets = ops.cast(y_true, "int32")
        valid = None
        if self.ignore_class is not None:
            valid = ops.not_equal(targets, self.ignore_class)
            targets = ops.where(valid, targets, 0)
        picked = ops.take_along_axis(
            log_probs, ops.expand_dims(targets, -1), axis=-1
        )
        losses = -(1.0 - self.smoothing) * ops.squeeze(picked, -1)
        losses -= self.smoothing * ops.mean(log_probs, axis=-1)
        if valid is not None:
            losses = ops.where(valid, losses, 0.0)
            set_keras_mask(losses, valid)
        return losses

    def get_config(self):
        return {
            **super().get_config(),
            "smoothing": self.smoothing,
            "ignore_class": self.ignore_class,
        }
