"""The base of attention layers whose score is chosen by name."""

import keras
from keras import ops

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_positive_int
from attention_zoo.layers.additive_attention import AdditiveAttention
from attention_zoo.layers.base_attention import BaseAttention
from attention_zoo.layers.bilinear_attention import BilinearAttention


class NamedScoreAttention(BaseAttention):
    """An attention layer with a score chosen by name and a distribution
    of its own.

    `HardAttention`, `LocalAttention` and `MonotonicAttention` compare
    queries with keys exactly as `AdditiveAttention` (`score="additive"`,
    Bahdanau's `v^T tanh(W_q q + W_k k + b)`, `units` wide) and
    `BilinearAttention` (`"general"` `q^T W k`, `"dot"`, `"scaled_dot"`)
    do, and turn the scores into weights their own way (`_distribute`).
    This base holds that score as the sublayer `"score"`, built with the
    layer's dtype policy, so the score weights, their names and their
    mixed-precision handling live in one place; scores reach
    `_distribute` in float32.

    Args:
        score: str, the score's name, one of the subclass's `SCORES`.
        units: optional int, the width of the additive score; None (the
            default) takes the key's width at build. Only allowed where
            the subclass uses it (`_uses_units`).
        kernel_initializer: initializer of the score's kernels.
        normalize: bool, the weight-normalised additive score.
        **kwargs: `BaseAttention` arguments (`dropout`, `seed`, `name`,
            `dtype`, ...).
    """

    SCORES = ("additive", "general", "dot", "scaled_dot")

    def __init__(
        self,
        score,
        units=None,
        kernel_initializer="glorot_uniform",
        normalize=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_choice("score", score, self.SCORES)
        self.score = score
        if units is not None:
            check_positive_int("units", units)
            if not self._uses_units():
                raise ValueError(
                    f"`units` is only used with {self._units_users()}. "
                    f"Received: units={units!r} with score={score!r}"
                )
        if normalize and score != "additive":
            raise ValueError(
                "`normalize` is only used with score='additive'. "
                f"Received: normalize={normalize!r} with score={score!r}"
            )
        self.units = units
        self.normalize = normalize
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def _uses_units(self):
        """Whether this configuration has a `units`-wide weight."""
        return self.score == "additive"

    def _units_users(self):
        """The configurations that take `units`, for the error message."""
        return "score='additive'"

    def _width(self, key_shape):
        """`units`, or the key's width when it is None."""
        return self.units or key_shape[-1]

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        if self.score == "additive":
            self._scorer = AdditiveAttention(
                self._width(key_shape),
                normalize=self.normalize,
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy,
                name="score",
            )
        else:
            self._scorer = BilinearAttention(
                score=self.score,
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy,
                name="score",
            )
        query_shape = tuple(query_shape)
        if len(query_shape) == 2:
            query_shape = (query_shape[0], 1, query_shape[1])
        self._scorer.build(query_shape, value_shape, key_shape)

    def _prepare_key(self, key):
        return self._scorer._prepare_key(key)

    def _score(self, query, key):
        return ops.cast(self._scorer._score(query, key), "float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "score": self.score,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
