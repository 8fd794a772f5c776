"""Benchmark: our Bahdanau and Luong layers against the Keras built-ins.

1. `AdditiveAttention(units=256)` against the "tutorial Bahdanau": two
   `keras.layers.Dense` projections (query; key with the bias) followed by
   `keras.layers.AdditiveAttention` (which materialises `(B, Tq, Tv, d)`
   and contracts it with its `scale` vector). Both hold the same weights:
   `W_q`, `W_k`, `b`, `v`.
2. `BilinearAttention(score="dot")` against `keras.layers.Attention()`.

Shapes: batch 32, query length 32, key/value length 128, width 256.
Forward and forward+backward, graph and XLA, float32 and mixed_bfloat16.

Run from the repository root:

    python -m benchmarks.attention_layers_bench [--repeats 15] [--out DIR]
"""

import keras

from attention_zoo.layers import AdditiveAttention
from attention_zoo.layers import BilinearAttention
from benchmarks import harness

BATCH, QUERY_LENGTH, VALUE_LENGTH, WIDTH = 32, 32, 128, 256


class TutorialBahdanau(keras.layers.Layer):
    """Dense projections + `keras.layers.AdditiveAttention`."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        policy = self.dtype_policy
        self._query_dense, self._key_dense = harness.query_key_projections(
            units, policy
        )
        self._attention = keras.layers.AdditiveAttention(
            dtype=policy, name="attention"
        )

    def call(self, query, value):
        return self._attention(
            [self._query_dense(query), value, self._key_dense(value)]
        )


class KerasDotAttention(keras.layers.Layer):
    """`keras.layers.Attention` called with keyword tensors."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._attention = keras.layers.Attention(
            dtype=self.dtype_policy, name="attention"
        )

    def call(self, query, value):
        return self._attention([query, value])


def main(argv=None):
    parser = harness.parser(__doc__, repeats=15)
    parser.add_argument(
        "--only", choices=("additive", "bilinear"), default=None
    )
    return harness.run(__file__, parser, compare_layers, argv)


def compare_layers(args):
    """The two comparisons' rows: `{"additive": rows, "bilinear": rows}`
    (those `--only` runs)."""
    results = {}
    inputs = harness.random_inputs(
        {
            "query": (BATCH, QUERY_LENGTH, WIDTH),
            "value": (BATCH, VALUE_LENGTH, WIDTH),
        }
    )
    if args.only != "bilinear":
        results["additive"] = harness.compare(
            "Bahdanau: AdditiveAttention vs Dense + keras AdditiveAttention",
            {
                "tutorial Bahdanau": lambda p: TutorialBahdanau(WIDTH, dtype=p),
                "AdditiveAttention": lambda p: AdditiveAttention(
                    WIDTH, dtype=p
                ),
            },
            inputs,
            baseline="tutorial Bahdanau",
            repeats=args.repeats,
        )
    if args.only != "additive":
        results["bilinear"] = harness.compare(
            "Luong dot: BilinearAttention(dot) vs keras Attention",
            {
                "keras Attention": lambda p: KerasDotAttention(dtype=p),
                "BilinearAttention(dot)": lambda p: BilinearAttention(
                    score="dot", dtype=p
                ),
            },
            inputs,
            baseline="keras Attention",
            repeats=args.repeats,
        )
    return results


if __name__ == "__main__":
    main()
