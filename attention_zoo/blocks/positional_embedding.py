"""Token embedding plus sinusoidal or learned position embedding."""

import math

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_positive_int


@attention_zoo_export(
    (
        "attention_zoo.PositionalEmbedding",
        "attention_zoo.blocks.PositionalEmbedding",
    )
)
class PositionalEmbedding(keras.layers.Layer):
    """Token embedding scaled by `sqrt(D)` plus a position embedding.

    Letters: `B` batch, `T` steps, `V` = `vocabulary_size`,
    `D` = `output_dim`. For token `x_t` at position `p = start_index + t`:

    `y_t = sqrt(D) * E[x_t] + P[p]`,

    where `E` `(V, D)` is learned and `P` is either learned
    (`positions="learned"`, `(max_length, D)`) or the fixed sinusoids of
    Vaswani et al. (`positions="sinusoidal"`):
    `P[p, i] = sin(p / 10000^(2i / D))` for the first `D / 2` channels and
    `cos(...)` of the same angles for the rest. The `sqrt(D)` factor
    (`scale_embeddings=True`, as in the paper) keeps the token part at the
    same scale as the unit-amplitude sinusoids; turn it off for learned
    positions if you prefer.

    `start_index` shifts the positions: a decoder step that embeds the one
    token at position `t` calls the layer with `start_index=t`.

    `reverse=True` maps hidden states back to vocabulary scores with the
    transposed token matrix, `h E^T` (`(B, T, D)` -> `(B, T, V)`, no
    positions, no scale): the tied output layer of Press and Wolf (2017).

    Masking: with `mask_zero=True` id 0 is padding and the output carries
    the mask `inputs != 0` (padded steps are still embedded; the mask tells
    downstream layers to ignore them). In reverse mode the mask of the
    hidden states is passed on.

    Args:
        vocabulary_size: int, `V`.
        output_dim: int, `D` (even for sinusoidal positions).
        max_length: int, number of positions (the size of the learned
            table; sinusoids are computed for any position but the layer is
            meant for positions `< max_length`).
        positions: `"sinusoidal"` or `"learned"`. Defaults to
            `"sinusoidal"`.
        mask_zero: bool, whether id 0 is padding. Defaults to `True`.
        scale_embeddings: bool, multiply the token embedding by `sqrt(D)`.
            Defaults to `True`.
        embeddings_initializer: initializer of `E` (and of `P` when
            learned). Defaults to `"uniform"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: int `(B, T)` token ids, or float `(B, T, D)` with
            `reverse=True`.
        start_index: int or scalar int tensor, position of the first step.
            Defaults to `0`.
        reverse: bool, return `inputs E^T`. Defaults to `False`.

    Returns:
        `(B, T, D)` in the compute dtype (`(B, T, V)` with `reverse=True`).

    Example:

    >>> layer = PositionalEmbedding(100, 8, max_length=16)
    >>> ids = np.array([[5, 7, 9, 0]])
    >>> tuple(layer(ids).shape)
    (1, 4, 8)
    >>> step = layer(ids[:, 2:3], start_index=2)  # equals position 2 above

    Reference:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
        https://arxiv.org/abs/1706.03762; Press and Wolf, "Using the Output
        Embedding to Improve Language Models", EACL 2017.
    """

    def __init__(
        self,
        vocabulary_size,
        output_dim,
        max_length,
        positions="sinusoidal",
        mask_zero=True,
        scale_embeddings=True,
        embeddings_initializer="uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("vocabulary_size", vocabulary_size)
        check_positive_int("output_dim", output_dim)
        check_positive_int("max_length", max_length)
        if positions not in ("sinusoidal", "learned"):
            raise ValueError(
                "`positions` must be 'sinusoidal' or 'learned'. "
                f"Received: positions={positions!r}"
            )
        if positions == "sinusoidal" and output_dim % 2:
            raise ValueError(
                "`output_dim` must be even for sinusoidal positions. "
                f"Received: output_dim={output_dim}"
            )
        self.vocabulary_size = vocabulary_size
        self.output_dim = output_dim
        self.max_length = max_length
        self.positions = positions
        self.mask_zero = mask_zero
        self.scale_embeddings = scale_embeddings
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
        )
        self.supports_masking = True

    def build(self, inputs_shape):
        self.token_embeddings = self.add_weight(
            name="token_embeddings",
            shape=(self.vocabulary_size, self.output_dim),
            initializer=self._clone(self.embeddings_initializer),
        )
        self.position_embeddings = None
        if self.positions == "learned":
            self.position_embeddings = self.add_weight(
                name="position_embeddings",
                shape=(self.max_length, self.output_dim),
                initializer=self._clone(self.embeddings_initializer),
            )

    def call(self, inputs, start_index=0, reverse=False):
        if reverse:
            kernel = ops.cast(self.token_embeddings, inputs.dtype)
            return ops.matmul(inputs, ops.transpose(kernel))  # (B, T, V)
        ids = ops.cast(inputs, "int32")
        x = ops.take(self.token_embeddings, ids, axis=0)  # (B, T, D)
        x = ops.cast(x, self.compute_dtype)
        if self.scale_embeddings:
            x = x * ops.cast(math.sqrt(self.output_dim), x.dtype)
        steps = ops.arange(ops.shape(ids)[1], dtype="int32")
        steps = steps + ops.cast(start_index, "int32")  # (T,)
        return x + ops.cast(self._positions(steps), x.dtype)  # (B, T, D)

    def _positions(self, steps):
        """Int positions `(T,)` -> position embeddings `(T, D)`."""
        if self.positions == "learned":
            return ops.take(self.position_embeddings, steps, axis=0)
        half = self.output_dim // 2
        # 1 / 10000^(2i / D) for i < D / 2, in float32 for large positions.
        rates = ops.exp(
            ops.arange(half, dtype="float32")
            * (-2.0 * math.log(10000.0) / self.output_dim)
        )
        angles = ops.cast(steps, "float32")[:, None] * rates[None]  # (T, D/2)
        return ops.concatenate((ops.sin(angles), ops.cos(angles)), axis=-1)

    @staticmethod
    def _clone(initializer):
        # A fresh instance per weight: a seeded initializer reused as is
        # would give both tables the same values.
        return initializer.__class__.from_config(initializer.get_config())

    def compute_mask(self, inputs, previous_mask=None):
        if not self.mask_zero or len(inputs.shape) != 2:
            return previous_mask
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, inputs_shape):
        if len(inputs_shape) == 3:  # reverse
            return tuple(inputs_shape[:-1]) + (self.vocabulary_size,)
        return tuple(inputs_shape) + (self.output_dim,)

    def compute_output_spec(self, inputs, start_index=0, reverse=False):
        shape = self.compute_output_shape(inputs.shape)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "output_dim": self.output_dim,
                "max_length": self.max_length,
                "positions": self.positions,
                "mask_zero": self.mask_zero,
                "scale_embeddings": self.scale_embeddings,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
            }
        )
        return config
