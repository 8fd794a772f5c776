"""The part every pre-norm Transformer block shares: arguments, config."""

import keras


def check_block_args(num_heads, key_dim, feed_forward_dim, dropout):
    """Validates the arguments shared by the Transformer blocks."""
    for name, value in (
        ("num_heads", num_heads),
        ("key_dim", key_dim),
        ("feed_forward_dim", feed_forward_dim),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(
                f"`{name}` must be a positive integer. "
                f"Received: {name}={value!r}"
            )
    if (
        isinstance(dropout, bool)
        or not isinstance(dropout, (int, float))
        or not 0 <= dropout < 1
    ):
        raise ValueError(
            "`dropout` must be a float in [0, 1). "
            f"Received: dropout={dropout!r}"
        )


def make_feed_forward(block, width, name):
    """Two dense layers `width -> feed_forward_dim -> width`, built."""
    inner = keras.layers.Dense(
        block.feed_forward_dim,
        activation=block.activation,
        dtype=block.dtype_policy,
        name=f"{name}_inner",
    )
    outer = keras.layers.Dense(
        width, dtype=block.dtype_policy, name=f"{name}_output"
    )
    return inner, outer


class TransformerBlock(keras.layers.Layer):
    """Base of `TransformerEncoderBlock` and `TransformerDecoderBlock`.

    Validates and stores the constructor arguments and writes them to the
    config; the subclasses build their attention and feed-forward layers.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        feed_forward_dim,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_block_args(num_heads, key_dim, feed_forward_dim, dropout)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.feed_forward_dim = feed_forward_dim
        self.dropout = float(dropout)
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.seed = seed
        self.supports_masking = True

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "feed_forward_dim": self.feed_forward_dim,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "seed": self.seed,
            }
        )
        return config
