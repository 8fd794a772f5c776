"""Small compositions of layers: residual stacks, dilated-conv networks."""

from attention_zoo.blocks.positional_embedding import PositionalEmbedding
from attention_zoo.blocks.streaming import autoregressive_generate
from attention_zoo.blocks.streaming import stream_sequence
from attention_zoo.blocks.tcn import TCN
from attention_zoo.blocks.transformer_decoder_block import (
    TransformerDecoderBlock,
)
from attention_zoo.blocks.transformer_encoder_block import (
    TransformerEncoderBlock,
)
from attention_zoo.blocks.wavenet import WaveNet

__all__ = [
    "PositionalEmbedding",
    "TCN",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
    "WaveNet",
    "autoregressive_generate",
    "stream_sequence",
]
