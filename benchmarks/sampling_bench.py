"""Sampling in the compiled loop: what the per-row, batch-free draws cost.

Run from the repository root (either backend):

    python -m benchmarks.sampling_bench [--out DIR]
    KERAS_BACKEND=jax python -m benchmarks.sampling_bench

The attention GRU decoder of `greedy_decoding_bench.py` (vocabulary 8,000,
embedding 256, `GRUCell(512)`, `AdditiveAttention(512)` over encoder states
`(64, 20, 512)`) generates 20 tokens for a batch of 64, all XLA-compiled
whole, keys projected once:

- greedy: `greedy_search` (the argmax: no draw at all);
- ours, temperature / top-k 50 / top-p 0.9: `sample_search`, each token
  the Gumbel-max draw with noise hashed from (row seed, step, token id)
  (`attention_zoo.decoding.counter_random`): the same sample for a row in
  any batch, on both backends;
- former: the sampler this replaced, one `keras.random.categorical` call
  per step over the whole batch with the seed `(seed, step)` (a row's draw
  then depends on the batch and the backend), over the whole vocabulary
  or over the nucleus cut by a full sort (`top_p_logits`); ours finds the
  nucleus by bisection (`top_p_mask`).

No END token is used, so every variant runs exactly 20 steps. Figures are
medians in ms per batch, measured interleaved, and their ratio to greedy.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from attention_zoo.decoding import greedy_search  # noqa: E402
from attention_zoo.decoding import sample_search  # noqa: E402
from attention_zoo.decoding import search_loop  # noqa: E402
from attention_zoo.decoding import top_p_logits  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks.greedy_decoding_bench import Decoder  # noqa: E402

START, NEVER = 2, -1  # no END: every variant decodes the same steps


class _StepSeed(keras.random.SeedGenerator):
    """The former sampler's stateless seed for `keras.random`."""

    def __init__(self, seed):  # no variable: usable inside a traced loop
        self._seed = seed

    def next(self, ordered=True):
        return self._seed


def categorical_search(step_fn, state, max_length, seed, top_p=None):
    """The former sampler: `keras.random.categorical` with `(seed, step)`,
    over the whole vocabulary or the sorted nucleus of `top_p_logits`."""

    def pick(index, log_probs):
        step_seed = ops.cast(
            ops.stack([seed, ops.cast(index, "int32")]), "uint32"
        )
        logits, ids = log_probs, None
        if top_p is not None:
            logits, ids = top_p_logits(log_probs, top_p)  # full sort
        drawn = keras.random.categorical(
            logits, 1, dtype="int32", seed=_StepSeed(step_seed)
        )[:, 0]
        if ids is None:
            return drawn
        return ops.take_along_axis(ids, drawn[:, None], axis=1)[:, 0]

    return search_loop.row_search(
        step_fn, state, START, NEVER, max_length, pick
    )


def main(argv=None):
    parser = harness.parser(__doc__, repeats=15)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=20)
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    return harness.run(__file__, parser, measure, argv)


def measure(args):
    """Each search's median seconds per batch, by name."""

    keras.utils.set_random_seed(0)
    decoder = Decoder(args.vocabulary_size, 256, 512, 512)
    rng = np.random.default_rng(0)
    memory = ops.convert_to_tensor(
        rng.normal(size=(args.batch_size, 20, 512)).astype("float32")
    )
    h0 = ops.convert_to_tensor(
        rng.normal(size=(args.batch_size, 512)).astype("float32")
    )
    seed = ops.convert_to_tensor(7, "int32")
    length = args.max_length

    def step_function(memory):
        keys = decoder.attention.precompute_keys(memory)

        def step_fn(token_ids, state, index):
            return decoder.fast_step(token_ids, state, keys, memory)

        return step_fn

    def sampled(**options):
        def run(memory, h, seed):
            out = sample_search(
                step_function(memory), h, START, NEVER, length,
                seed=seed, **options,
            )  # fmt: skip
            return out["tokens"]

        return run

    candidates = {
        "greedy": lambda memory, h, seed: greedy_search(
            step_function(memory), h, START, NEVER, length
        )["tokens"],
        "ours, temperature 1": sampled(temperature=1.0),
        "ours, top-k 50": sampled(sampling="top_k", top_k=50),
        "ours, top-p 0.9": sampled(sampling="top_p", top_p=0.9),
        "former, temperature 1": lambda memory, h, seed: categorical_search(
            step_function(memory), h, length, seed
        )["tokens"],
        "former, top-p 0.9 (sorted)": lambda memory, h, seed: (
            categorical_search(step_function(memory), h, length, seed, 0.9)[
                "tokens"
            ]
        ),
    }
    runners = {}
    for name, fn in candidates.items():
        compiled = harness.compiled(fn)

        def run(compiled=compiled):
            ops.convert_to_numpy(compiled(memory, h0, seed))

        runners[name] = run
    times = harness.median_times(runners, repeats=args.repeats)
    print(
        f"\n## Sampling vs greedy, XLA (backend={keras.backend.backend()}, "
        f"batch {args.batch_size}, {length} tokens, vocabulary "
        f"{args.vocabulary_size}, median of {args.repeats})"
    )
    print("| search | ms per batch | vs greedy |")
    print("| --- | ---: | ---: |")
    for name, seconds in times.items():
        print(
            f"| {name} | {1e3 * seconds:.1f} | "
            f"{seconds / times['greedy']:.2f}x |"
        )
    return times


if __name__ == "__main__":
    main()
