"""Transformer blocks vs keras-hub's pre-norm TransformerEncoder/Decoder.

Batch 16, source and target length 64, width 256, 4 heads (key_dim 64),
feed-forward 1024, no dropout; keras-hub blocks with `normalize_first=True`
(the same pre-norm layout). Forward and forward+backward, graph and XLA,
float32 and mixed_bfloat16. Run from the repository root:

    python -m benchmarks.transformer_blocks_bench [--repeats N] [--out DIR]

keras-hub comes with the `benchmarks` extra: `pip install ".[benchmarks]"`.
"""

import keras

from attention_zoo.blocks import TransformerDecoderBlock
from attention_zoo.blocks import TransformerEncoderBlock
from benchmarks.harness import compare
from benchmarks.harness import parser
from benchmarks.harness import random_inputs
from benchmarks.harness import run

BATCH, LENGTH, WIDTH, HEADS, FF = 16, 64, 256, 4, 1024


def _keras_hub():
    """keras-hub, imported when measuring (`--help` and the flags work
    without it)."""
    try:
        # lazy: keras-hub is the benchmarks extra's; the flags parse
        # without it
        import keras_hub
    except ImportError as error:  # only this benchmark needs it
        raise SystemExit(
            "transformer_blocks_bench needs keras-hub: "
            'pip install ".[benchmarks]"'
        ) from error
    return keras_hub


class HubDecoder(keras.layers.Layer):
    """keras-hub's decoder under our argument names (for `compare`)."""

    def __init__(self, **kwargs):
        super().__init__(dtype=kwargs.pop("dtype"))
        self.block = _keras_hub().layers.TransformerDecoder(
            FF, HEADS, normalize_first=True, dtype=self.dtype_policy
        )

    def call(self, inputs, encoder_outputs):
        return self.block(inputs, encoder_outputs)


def main(argv=None):
    return run(__file__, parser(__doc__, repeats=10), measure, argv)


def measure(args):
    """`compare`'s rows: `{"encoder": rows, "decoder": rows}`."""
    keras_hub = _keras_hub()
    shape = (BATCH, LENGTH, WIDTH)
    encoder = compare(
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
    decoder = compare(
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
    return {"encoder": encoder, "decoder": decoder}


if __name__ == "__main__":
    main()
