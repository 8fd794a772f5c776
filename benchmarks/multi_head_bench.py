"""MultiHead vs `keras.layers.MultiHeadAttention`, self-attention.

Batch 32, length 128, width 256, 8 heads, key_dim 32; forward and
forward+backward, graph and XLA, float32 and mixed_bfloat16. Run from the
repository root:

    python -m benchmarks.multi_head_bench [--repeats N] [--out DIR]
"""

import keras

from attention_zoo.layers import MultiHead
from benchmarks.harness import compare
from benchmarks.harness import parser
from benchmarks.harness import random_inputs
from benchmarks.harness import run
from benchmarks.harness import same_mode_ratios

BATCH, LENGTH, WIDTH, HEADS, KEY_DIM = 32, 128, 256, 8, 32


def main(argv=None):
    return run(__file__, parser(__doc__, repeats=15), measure, argv)


def measure(args):
    """`compare`'s rows, then the same-mode ratios printed."""
    inputs = random_inputs(
        {"query": (BATCH, LENGTH, WIDTH), "value": (BATCH, LENGTH, WIDTH)}
    )
    candidates = {
        "keras.MultiHeadAttention": lambda policy: (
            keras.layers.MultiHeadAttention(HEADS, KEY_DIM, dtype=policy)
        ),
        "MultiHead": lambda policy: MultiHead(HEADS, KEY_DIM, dtype=policy),
    }
    rows = compare(
        f"MultiHead self-attention B={BATCH} T={LENGTH} d={WIDTH} "
        f"H={HEADS} Dk={KEY_DIM}",
        candidates,
        inputs,
        baseline="keras.MultiHeadAttention",
        repeats=args.repeats,
    )
    # MultiHead against the built-in compiled the same way.
    same_mode_ratios(rows, "keras.MultiHeadAttention")
    return rows


if __name__ == "__main__":
    main()
