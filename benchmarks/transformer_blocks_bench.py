"""Transformer blocks vs keras-hub's pre-norm TransformerEncoder/Decoder.

Batch 16, source and target length 64, width 256, 4 heads (key_dim 64),
feed-forward 1024, no dropout; keras-hub blocks with `normalize_first=True`
(the same pre-norm layout). Forward and forward+backward, graph and XLA,
float32 and mixed_bfloat16. Run from the repository root:

    python benchmarks/transformer_blocks_bench.py [--repeats N]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import keras_hub  # noqa: E402
from harness import compare  # noqa: E402
from harness import random_inputs  # noqa: E402

from attention_zoo.blocks import TransformerDecoderBlock  # noqa: E402
from attention_zoo.blocks import TransformerEncoderBlock  # noqa: E402

BATCH, LENGTH, WIDTH, HEADS, FF = 16, 64, 256, 4, 1024


class HubDecoder(keras.layers.Layer):
    """keras-hub's decoder under our argument names (for `compare`)."""

    def __init__(self, **kwargs):
        super().__init__(dtype=kwargs.pop("dtype"))
        self.block = keras_hub.layers.TransformerDecoder(
            FF, HEADS, normalize_first=True, dtype=self.dtype_policy
        )

    def call(self, inputs, encoder_outputs):
        return self.block(inputs, encoder_outputs)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    shape = (BATCH, LENGTH, WIDTH)
    compare(
        f"Encoder block B={BATCH} T={LENGTH} d={WIDTH} H={HEADS} ff={FF}",
        {
            "keras_hub.TransformerEncoder": lambda policy: (
                keras_hub.layers.TransformerEncoder(
                    FF, HEADS, normalize_first=True, dtype=policy
                )
            ),
            "TransformerEncoderBlock": lambda policy: TransformerEncoderBlock(
                HEADS, WIDTH // HEADS, FF, dtype=policy
            ),
        },
        random_inputs({"inputs": shape}),
        baseline="keras_hub.TransformerEncoder",
        repeats=args.repeats,
    )
    compare(
        f"Decoder block B={BATCH} Tt=Ts={LENGTH} d={WIDTH} H={HEADS} ff={FF}",
        {
            "keras_hub.TransformerDecoder": lambda policy: HubDecoder(
                dtype=policy
            ),
            "TransformerDecoderBlock": lambda policy: TransformerDecoderBlock(
                HEADS, WIDTH // HEADS, FF, dtype=policy
            ),
        },
        random_inputs({"inputs": shape, "encoder_outputs": shape}),
        baseline="keras_hub.TransformerDecoder",
        repeats=args.repeats,
    )


if __name__ == "__main__":
    main()
