"""`attention_dropout` of the Transformer blocks: every `MultiHead` of the
block drops its attention weights in training (the rest of the block
without dropout, the output changes only then), round-trips through the
config, and a config saved without it loads with 0."""

import numpy as np
import pytest

from attention_zoo.blocks import TransformerDecoderBlock
from attention_zoo.blocks import TransformerEncoderBlock
from attention_zoo.layers.multi_head import MultiHead
from tests.support.layer_checks import to_numpy

ARGUMENTS = dict(num_heads=2, key_dim=4, feed_forward_dim=16, seed=3)
X = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
MEMORY = np.random.default_rng(1).normal(size=(2, 6, 8)).astype("float32")
BLOCKS = [
    pytest.param(TransformerEncoderBlock, (X,), id="encoder"),
    pytest.param(TransformerDecoderBlock, (X, MEMORY), id="decoder"),
]


def _attentions(block):
    return [
        layer
        for layer in block._flatten_layers()
        if isinstance(layer, MultiHead)
    ]


@pytest.mark.parametrize("block_class, inputs", BLOCKS)
def test_attention_weights_are_dropped_in_training_only(block_class, inputs):
    block = block_class(**ARGUMENTS, attention_dropout=0.5)
    inference = to_numpy(block(*inputs))
    # The encoder's self-attention; the decoder's and its cross-attention.
    assert len(_attentions(block)) == len(inputs)
    assert {a.dropout for a in _attentions(block)} == {0.5}
    np.testing.assert_allclose(to_numpy(block(*inputs)), inference)
    trained = to_numpy(block(*inputs, training=True))
    assert np.abs(trained - inference).max() > 1e-3
    plain = block_class(**ARGUMENTS)
    plain(*inputs)
    plain.set_weights(block.get_weights())
    np.testing.assert_allclose(
        to_numpy(plain(*inputs, training=True)), inference, atol=1e-6
    )


@pytest.mark.parametrize("block_class, inputs", BLOCKS)
def test_the_config_keeps_it_and_older_configs_load_without(
    block_class, inputs
):
    config = block_class(**ARGUMENTS, attention_dropout=0.25).get_config()
    assert config["attention_dropout"] == 0.25
    assert block_class.from_config(config).get_config() == config
    del config["attention_dropout"]
    assert block_class.from_config(config).attention_dropout == 0.0
    with pytest.raises(ValueError, match="attention_dropout=1.0"):
        block_class(**ARGUMENTS, attention_dropout=1.0)
