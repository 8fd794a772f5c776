"""The part every pre-norm Transformer block shares: arguments, config."""

import keras

from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo.layers.multi_head import MultiHead


def check_block_args(
    num_heads,
    key_dim,
    feed_forward_dim,
    dropout,
    num_key_value_heads=None,
    sliding_window=None,
    use_gate=False,
):
    """Validates the arguments shared by the Transformer blocks."""
    check_positive_int("num_heads", num_heads)
    check_positive_int("key_dim", key_dim)
    check_positive_int("feed_forward_dim", feed_forward_dim)
    check_rate("dropout", dropout)
    if num_key_value_heads is not None:
        check_positive_int("num_key_value_heads", num_key_value_heads)
        if num_heads % num_key_value_heads:
            raise ValueError(
                "`num_heads` must be a multiple of `num_key_value_heads`. "
                f"Received: num_heads={num_heads}, "
                f"num_key_value_heads={num_key_value_heads}"
            )
    if sliding_window is not None:
        check_positive_int("sliding_window", sliding_window)
    if not isinstance(use_gate, bool):
        raise ValueError(
            f"`use_gate` must be a bool. Received: use_gate={use_gate!r}"
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
    `num_key_value_heads`, `sliding_window` and `use_gate` are passed to
    `MultiHead`; each subclass says which of its attentions get them.
    `attention_dropout` is every attention's dropout on its weights.
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
        num_key_value_heads=None,
        sliding_window=None,
        use_gate=False,
        attention_dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_rate("attention_dropout", attention_dropout)
        check_block_args(
            num_heads,
            key_dim,
            feed_forward_dim,
            dropout,
            num_key_value_heads,
            sliding_window,
            use_gate,
        )
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.feed_forward_dim = feed_forward_dim
        self.dropout = float(dropout)
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.seed = seed
        self.num_key_value_heads = num_key_value_heads
        self.sliding_window = sliding_window
        self.use_gate = use_gate
        self.attention_dropout = float(attention_dropout)
        self.supports_masking = True

    def _make_attention(self, name, sliding_window=None, **kwargs):
        """A `MultiHead` with the block's heads, key/value heads, gate and
        dropout on the attention weights."""
        return MultiHead(
            self.num_heads,
            self.key_dim,
            num_key_value_heads=self.num_key_value_heads,
            sliding_window=sliding_window,
            use_gate=self.use_gate,
            dropout=self.attention_dropout,
            seed=self.seed,
            dtype=self.dtype_policy,
            name=name,
            **kwargs,
        )

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
                "num_key_value_heads": self.num_key_value_heads,
                "sliding_window": self.sliding_window,
                "use_gate": self.use_gate,
                "attention_dropout": self.attention_dropout,
            }
        )
        return config
