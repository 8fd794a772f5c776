"""Small compositions of layers: residual stacks, dilated-conv networks."""

from attention_zoo.blocks.streaming import autoregressive_generate
from attention_zoo.blocks.streaming import stream_sequence
from attention_zoo.blocks.tcn import TCN
from attention_zoo.blocks.wavenet import WaveNet

__all__ = [
    "TCN",
    "WaveNet",
    "autoregressive_generate",
    "stream_sequence",
]
