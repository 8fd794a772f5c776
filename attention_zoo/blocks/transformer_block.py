"""The part every pre-norm Transformer block shares: arguments, config."""

import keras

from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate


def check_block_args(num_heads, key_dim, feed_forward_dim, dropout):
    """Validates the arguments shared by the Transformer blocks."""
    check_positive_int("num_heads", num_heads)
    check_positive_int("key_dim", key_dim)
    check_positive_int("feed_forward_dim", feed_forward_dim)
    check_rate("dropout", dropout)


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
