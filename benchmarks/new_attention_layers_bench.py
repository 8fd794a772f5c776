"""Benchmark: monotonic, local and hard attention against the closest
built-in or naive implementation.

1. `monotonic`: `MonotonicAttention(units=256)` (parallel mode, additive
   energy) against `CumprodMonotonic`, the closed form of the expected
   alignment that TF Addons uses (Raffel et al. 2017, Section 2.3): a
   Python loop over the (static) query steps `i` computing
   `alpha_i = p_i * c_i * cumsum(alpha_{i-1} / clip(c_i, 1e-10, 1))`,
   `c_i = cumprod_exclusive(1 - p_i)`, from `alpha_{-1}` one-hot at
   position 0, then `context = alpha @ value`. Its energy
   `v^T tanh(W_q q + W_k k + b) + r` comes from `keras.layers.Dense`
   layers (the pairwise part in float32, as ours) holding our weights.
   Ours computes the recurrence exactly (an anti-diagonal scan); the
   script prints once the largest difference between the two alignments
   on the benchmark inputs, since the clipped division loses accuracy on
   long memories (at the full shapes the closed form loses most of the
   mass of later rows: differences of tenths).
2. `local-m`: `LocalAttention(window=8)` (local-m, general score) against
   a `keras.layers.Dense` (`W`, no bias, as ours) followed by a softmax
   over the band `|s - t| <= D` and the weighted sum. The built-in
   `keras.layers.Attention` takes no attention mask, so the baseline does
   what it does (dot scores, a masked `keras.layers.Softmax`, `@ value`)
   with the band as the mask; a second candidate uses
   `keras.ops.dot_product_attention` with the same mask.
3. `local-p`: `LocalAttention(window=8, mode="predictive", units=256)`
   against a naive full-matrix version written from the paper: all
   `Tq x Tv` general scores, `p_t = S sigmoid(v_p^T tanh(W_p h_t))` from
   `Dense` layers (float32, as ours), a softmax over `|s - p_t| <= D`
   (real `p_t`, not rounded), times `exp(-(s - p_t)^2 / (2 sigma^2))`,
   `sigma = D / 2`, not renormalised. Our layer also scores the whole
   matrix, so this measures implementation overhead only.
4. `hard`: `HardAttention(units=256)` read by argmax (`training=False`)
   and by sampling (`training=True`, with the REINFORCE term `log_prob`
   added to the output so that the backward pass reaches the score
   weights, as in training) against our soft `AdditiveAttention(256)`
   with the same score. This measures what the hard read costs over a
   soft one; the outputs differ by design. The argmax read has no
   gradient to the query or the score weights, so it is timed forward
   only (the reason is printed).

In 1-3 ours and the baseline compute the same function: with shared
weights the outputs agree to float32 precision (the smoke test checks it).

Shapes: batch 32, query length 32, key/value length 128, width 256,
window D = 8. Forward and forward+backward, graph and XLA (jax.jit on
JAX), float32 and mixed_bfloat16. `--small` (the smoke test): batch 2,
query length 4, value length 12, width 8, D = 2, 2 repeats, float32 only.

Run from the repository root:

    python -m benchmarks.new_attention_layers_bench [--repeats 15]
    KERAS_BACKEND=jax python -m benchmarks.new_attention_layers_bench
"""

import keras
import numpy as np
from keras import ops

from attention_zoo.layers import AdditiveAttention
from attention_zoo.layers import HardAttention
from attention_zoo.layers import LocalAttention
from attention_zoo.layers import MonotonicAttention
from benchmarks import harness

COMPARISONS = ("monotonic", "local-m", "local-p", "hard")
FULL = {"batch": 32, "query": 32, "value": 128, "width": 256, "window": 8}
SMALL = {"batch": 2, "query": 4, "value": 12, "width": 8, "window": 2}


def _exclusive_cumprod(x):
    """`[1, x_0, x_0 x_1, ...]` along the last axis of `(B, T)`."""
    ones = ops.ones_like(x[:, :1])
    return ops.concatenate([ones, ops.cumprod(x, axis=-1)[:, :-1]], axis=-1)


class CumprodMonotonic(keras.layers.Layer):
    """Monotonic attention by the closed form with the clipped division.

    Holds `W_q` (`"query"`), `W_k` and `b` (`"key"`), `v` (`"v"`) and `r`
    (`"score_bias"`), the weights of `MonotonicAttention(units)`.
    """

    WEIGHT_MAP = {
        "query/kernel": "score/query_kernel",
        "key/kernel": "score/key_kernel",
        "key/bias": "score/bias",
        "v/kernel": "score/v",
        "score_bias": "score_bias",
    }

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self._query_dense, self._key_dense = harness.query_key_projections(
            units, self.dtype_policy
        )
        # The (B, Tq, Tv, units) part in float32, as MonotonicAttention.
        self._v_dense = keras.layers.Dense(
            1, use_bias=False, dtype="float32", name="v"
        )

    def build(self, query_shape, value_shape):
        self.score_bias = self.add_weight(
            name="score_bias", shape=(), initializer="zeros", autocast=False
        )

    def call(self, query, value, return_attention_scores=False):
        projected_query = ops.cast(self._query_dense(query), "float32")
        projected_key = ops.cast(self._key_dense(value), "float32")
        hidden = ops.tanh(
            ops.expand_dims(projected_query, 2)
            + ops.expand_dims(projected_key, 1)
        )  # (B, Tq, Tv, units)
        energies = ops.squeeze(self._v_dense(hidden), -1)
        energies = energies + ops.convert_to_tensor(self.score_bias)
        probabilities = ops.sigmoid(energies)  # (B, Tq, Tv) float32
        batch, length = ops.shape(value)[0], ops.shape(value)[1]
        first = ops.cast(ops.arange(length) == 0, "float32")
        alignment = ops.broadcast_to(first, (batch, length))
        rows = []
        for i in range(query.shape[1]):
            p = probabilities[:, i]
            cumprod = _exclusive_cumprod(1.0 - p)
            alignment = (
                p
                * cumprod
                * ops.cumsum(alignment / ops.clip(cumprod, 1e-10, 1.0), axis=-1)
            )
            rows.append(alignment)
        alignments = ops.stack(rows, axis=1)  # (B, Tq, Tv)
        output = ops.matmul(ops.cast(alignments, value.dtype), value)
        if return_attention_scores:
            return output, alignments
        return output


def _band(value_length, centre, window):
    """bool `(B|1, Tq, Tv)`: `|s - centre_t| <= window`."""
    positions = ops.cast(ops.arange(value_length), "float32")
    return ops.abs(positions - ops.expand_dims(centre, -1)) <= float(window)


class BandAttention(keras.layers.Layer):
    """Local-m by built-ins: `Dense` (`W`), then softmax over the band.

    `p_t = min(t, Tv - 1)`. With `dot_product_attention=False`, dot scores,
    `keras.layers.Softmax` masked to the band and `@ value` (what
    `keras.layers.Attention` does, with a band mask); with `True`,
    `keras.ops.dot_product_attention(..., mask=band, scale=1)`.
    """

    WEIGHT_MAP = {"query/kernel": "score/kernel"}

    def __init__(self, width, window, dot_product_attention=False, **kwargs):
        super().__init__(**kwargs)
        self.window = window
        self.dot_product_attention = dot_product_attention
        self._query_dense = keras.layers.Dense(
            width, use_bias=False, dtype=self.dtype_policy, name="query"
        )
        self._softmax = keras.layers.Softmax(
            dtype=self.dtype_policy, name="softmax"
        )

    def call(self, query, value):
        query = self._query_dense(query)  # (B, Tq, dk)
        query_length, value_length = query.shape[1], ops.shape(value)[1]
        centre = ops.minimum(
            ops.cast(ops.arange(query_length), "float32"),
            ops.cast(value_length - 1, "float32"),
        )
        band = _band(value_length, centre, self.window)
        if self.dot_product_attention:
            output = ops.dot_product_attention(
                ops.expand_dims(query, 2),  # (B, Tq, 1, dk): one head
                ops.expand_dims(value, 2),
                ops.expand_dims(value, 2),
                mask=band[None, None],
                scale=1.0,
            )
            return ops.squeeze(output, 2)
        scores = ops.matmul(query, ops.transpose(value, (0, 2, 1)))
        weights = self._softmax(scores, mask=band)
        return ops.matmul(ops.cast(weights, value.dtype), value)


class NaiveLocalP(keras.layers.Layer):
    """Local-p over the full score matrix, from the paper's formulas.

    `W` (`"query"`, the general score) in the compute dtype; `W_p`
    (`"position_hidden"`) and `v_p` (`"position_logit"`), the scores, the
    softmax and the Gaussian in float32.
    """

    WEIGHT_MAP = {
        "query/kernel": "score/kernel",
        "position_hidden/kernel": "position_kernel",
        "position_logit/kernel": "position_v",
    }

    def __init__(self, width, window, units, **kwargs):
        super().__init__(**kwargs)
        self.window = window
        self._query_dense = keras.layers.Dense(
            width, use_bias=False, dtype=self.dtype_policy, name="query"
        )
        self._position_hidden = keras.layers.Dense(
            units,
            activation="tanh",
            use_bias=False,
            dtype="float32",
            name="position_hidden",
        )
        self._position_logit = keras.layers.Dense(
            1, use_bias=False, dtype="float32", name="position_logit"
        )
        self._softmax = keras.layers.Softmax(dtype="float32", name="softmax")

    def call(self, query, value):
        scores = ops.matmul(
            self._query_dense(query), ops.transpose(value, (0, 2, 1))
        )  # (B, Tq, Tv): every pair
        scores = ops.cast(scores, "float32")
        value_length = ops.shape(value)[1]
        logits = self._position_logit(
            self._position_hidden(ops.cast(query, "float32"))
        )
        centre = ops.cast(value_length, "float32") * ops.sigmoid(
            ops.squeeze(logits, -1)
        )  # (B, Tq)
        band = _band(value_length, centre, self.window)
        weights = self._softmax(scores, mask=band)
        positions = ops.cast(ops.arange(value_length), "float32")
        distance = positions - ops.expand_dims(centre, -1)
        sigma = self.window / 2.0
        weights = weights * ops.exp(-ops.square(distance) / (2 * sigma**2))
        return ops.matmul(ops.cast(weights, value.dtype), value)


class HardRead(keras.layers.Layer):
    """`HardAttention(units)` with a fixed `training` flag.

    The sampled read returns `output + log_prob`: its loss then holds the
    REINFORCE term, whose gradient reaches the query and score weights.
    """

    def __init__(self, units, sampled, **kwargs):
        super().__init__(**kwargs)
        self.sampled = sampled
        self._attention = HardAttention(
            units, seed=0, dtype=self.dtype_policy, name="hard"
        )

    def call(self, query, value):
        if not self.sampled:
            return self._attention(query, value, training=False)
        output, log_prob, _ = self._attention(
            query, value, return_reinforce_terms=True, training=True
        )
        return output + ops.cast(ops.expand_dims(log_prob, -1), output.dtype)


def comparison(name, sizes):
    """`(title, candidates, baseline, forward_only)` for `compare`.

    `candidates` maps a name to `make(dtype_policy) -> layer`;
    `forward_only` maps a candidate to the reason it has no backward pass.
    """
    width, window = sizes["width"], sizes["window"]
    if name == "monotonic":
        return (
            "Monotonic: MonotonicAttention(parallel) vs cumprod closed form",
            {
                "cumprod closed form": lambda p: CumprodMonotonic(
                    width, dtype=p
                ),
                "MonotonicAttention": lambda p: MonotonicAttention(
                    width, dtype=p
                ),
            },
            "cumprod closed form",
            {},
        )
    if name == "local-m":
        return (
            "Local-m: LocalAttention(monotonic) vs Dense + band softmax",
            {
                "Dense + band Softmax": lambda p: BandAttention(
                    width, window, dtype=p
                ),
                "Dense + dot_product_attn": lambda p: BandAttention(
                    width, window, dot_product_attention=True, dtype=p
                ),
                "LocalAttention(local-m)": lambda p: LocalAttention(
                    window, dtype=p
                ),
            },
            "Dense + band Softmax",
            {},
        )
    if name == "local-p":
        return (
            "Local-p: LocalAttention(predictive) vs naive full matrix",
            {
                "naive local-p": lambda p: NaiveLocalP(
                    width, window, width, dtype=p
                ),
                "LocalAttention(local-p)": lambda p: LocalAttention(
                    window, mode="predictive", units=width, dtype=p
                ),
            },
            "naive local-p",
            {},
        )
    if name == "hard":
        return (
            "Hard: HardAttention (argmax, sampled) vs soft AdditiveAttention",
            {
                "AdditiveAttention (soft)": lambda p: AdditiveAttention(
                    width, dtype=p
                ),
                "HardAttention argmax": lambda p: HardRead(
                    width, sampled=False, dtype=p
                ),
                "HardAttention sampled": lambda p: HardRead(
                    width, sampled=True, dtype=p
                ),
            },
            "AdditiveAttention (soft)",
            {
                "HardAttention argmax": "the argmax read has no gradient to "
                "the query or the score weights (inference only)"
            },
        )
    raise ValueError(f"Unknown comparison: {name!r}")


def _weight(layer, suffix):
    found = [w for w in layer.weights if w.path.endswith("/" + suffix)]
    if len(found) != 1:
        raise ValueError(f"{layer.name}: no single weight '{suffix}'")
    return found[0]


def shared_layers(name, sizes, inputs):
    """Ours and the baseline(s) of comparison 1-3, float32, built, with
    our weights copied into the baselines: `{candidate name: layer}`."""
    _, candidates, _, _ = comparison(name, sizes)
    layers = {key: make("float32") for key, make in candidates.items()}
    for layer in layers.values():
        layer(**inputs)
    ours = [x for x in layers.values() if not hasattr(x, "WEIGHT_MAP")]
    for layer in layers.values():
        for mine, theirs in getattr(layer, "WEIGHT_MAP", {}).items():
            _weight(layer, mine).assign(_weight(ours[0], theirs))
    return layers


def alignment_difference(sizes, inputs):
    """Largest `|alpha_ours - alpha_cumprod|` on `inputs` (float32)."""
    layers = shared_layers("monotonic", sizes, inputs)
    _, ours = layers["MonotonicAttention"](
        **inputs, return_attention_scores=True
    )
    _, cumprod = layers["cumprod closed form"](
        **inputs, return_attention_scores=True
    )
    ours, cumprod = ops.convert_to_numpy(ours), ops.convert_to_numpy(cumprod)
    return float(np.max(np.abs(ours - cumprod)))


def main(argv=None):
    parser = harness.parser(__doc__, repeats=15)
    parser.add_argument(
        "--only",
        choices=COMPARISONS,
        action="append",
        help="run this comparison only (repeatable); default: all",
    )
    parser.add_argument(
        "--small",
        action="store_true",
        help="tiny shapes, 2 repeats, float32 only (the smoke test)",
    )
    return harness.run(__file__, parser, measure, argv)


def measure(args):
    """`compare`'s rows per comparison run (`--only`), by name."""
    keras.utils.set_random_seed(0)  # the same weights (per backend) each run
    sizes = SMALL if args.small else FULL
    repeats = min(args.repeats, 2) if args.small else args.repeats
    policies = ("float32",) if args.small else ("float32", "mixed_bfloat16")
    inputs = harness.random_inputs(
        {
            "query": (sizes["batch"], sizes["query"], sizes["width"]),
            "value": (sizes["batch"], sizes["value"], sizes["width"]),
        }
    )
    results = {}
    for name in args.only or COMPARISONS:
        if name == "monotonic":
            difference = alignment_difference(sizes, inputs)
            print(
                "\nMonotonic alignments, ours (exact) vs cumprod closed "
                f"form, float32, same weights: max |difference| = "
                f"{difference:.3g}"
            )
        title, candidates, baseline, forward_only = comparison(name, sizes)
        results[name] = harness.compare(
            title,
            candidates,
            inputs,
            baseline=baseline,
            policies=policies,
            repeats=repeats,
            forward_only=forward_only,
        )
    return results


if __name__ == "__main__":
    main()
