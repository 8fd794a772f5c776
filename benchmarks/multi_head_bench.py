"""MultiHead vs `keras.layers.MultiHeadAttention`, self-attention.

Batch 32, length 128, width 256, 8 heads, key_dim 32; forward and
forward+backward, graph and XLA, float32 and mixed_bfloat16. Run from the
repository root:

    python benchmarks/multi_head_bench.py [--repeats N]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
from harness import compare  # noqa: E402
from harness import random_inputs  # noqa: E402

from attention_zoo.layers import MultiHead  # noqa: E402

BATCH, LENGTH, WIDTH, HEADS, KEY_DIM = 32, 128, 256, 8, 32


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
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
    # Same-mode ratios: MultiHead against the built-in compiled the same way.
    times = {
        (r["pass"], r["policy"], r["candidate"], r["mode"]): r["ms"]
        for r in rows
    }
    print("\nsame mode: keras ms / MultiHead ms")
    for (pas, policy, name, mode), ms in times.items():
        if name == "MultiHead":
            base = times[(pas, policy, "keras.MultiHeadAttention", mode)]
            print(f"{pas:<9}{policy:<16}{mode:<7}{base / ms:>6.2f}x")


if __name__ == "__main__":
    main()
