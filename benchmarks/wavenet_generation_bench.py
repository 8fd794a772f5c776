"""WaveNet generation: streaming queues vs recomputing the receptive field.

Run from the repository root:

    python -m benchmarks.wavenet_generation_bench [--out DIR]

A WaveNet of 3 stacks of dilations 1, 2, ..., 512 (128 residual and 128 skip
channels, gated units, kernel size 2) with a `Dense` head mapping the skip
sum back to the input width generates one sample at a time, batch 1, in
two ways:

- naive: every new sample is one compiled forward pass over the last
  `receptive_field` (3071) samples, keeping only the last output; a few
  samples are timed one call each;
- streaming: the fast WaveNet algorithm (one queue per convolution,
  `WaveNet.step`), with the whole loop of `--stream-steps` samples compiled
  as one `ops.fori_loop` (`autoregressive_generate`); time / steps.

Both are measured in one run for each compilation mode (TensorFlow:
`tf.function` graph and XLA; JAX: `jax.jit`) and dtype policy (float32,
mixed_bfloat16). Figures are medians, per generated sample.
"""

import statistics
import time

import keras
import numpy as np
from keras import ops

from attention_zoo.blocks import WaveNet
from attention_zoo.blocks import autoregressive_generate
from benchmarks import harness
from benchmarks.harness import BACKEND

DILATIONS = tuple(2**i for i in range(10))


def build(policy, channels, stacks):
    net = WaveNet(128, 128, dilations=DILATIONS, stacks=stacks, dtype=policy)
    net.build((None, None, channels))
    head = keras.layers.Dense(channels, activation="tanh", dtype="float32")
    head.build((None, 128))
    return net, head


def time_naive(net, head, channels, mode, samples):
    """Seconds per sample: one compiled pass over the receptive field each."""
    r = net.receptive_field

    def next_window(window):
        # (1, R, C) -> (1, R, C): drop the oldest sample, append the new one.
        sample = head(net(window)[:, -1, :])  # (1, C)
        return ops.concatenate([window[:, 1:], sample[:, None, :]], axis=1)

    fn = harness.compiled(next_window, mode)
    window = ops.convert_to_tensor(
        np.random.uniform(-1, 1, (1, r, channels)).astype("float32")
    )
    window = fn(window)  # compile
    ops.convert_to_numpy(window)
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        window = fn(window)
        ops.convert_to_numpy(window[:, -1])
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_streaming(net, head, channels, mode, steps, repeats):
    """Seconds per sample: `steps` samples in one compiled loop."""

    def generate(x0):
        return autoregressive_generate(net, head, x0, steps)

    fn = harness.compiled(generate, mode)
    x0 = ops.convert_to_tensor(
        np.random.uniform(-1, 1, (1, channels)).astype("float32")
    )
    ops.convert_to_numpy(fn(x0))  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = ops.convert_to_numpy(fn(x0))
        times.append((time.perf_counter() - start) / steps)
    assert np.all(np.isfinite(out))
    return statistics.median(times)


def main(argv=None):
    parser = harness.parser(__doc__, repeats=3)
    parser.add_argument("--channels", type=int, default=1)
    parser.add_argument("--stacks", type=int, default=3)
    parser.add_argument("--naive-samples", type=int, default=10)
    parser.add_argument("--stream-steps", type=int, default=1000)
    parser.add_argument("--policies", default="float32,mixed_bfloat16")
    default_modes = "graph,xla" if BACKEND == "tensorflow" else "xla"
    parser.add_argument("--modes", default=default_modes)
    return harness.run(__file__, parser, measure, argv)


def measure(args):
    """A record per policy and mode: naive and streaming milliseconds per
    sample and the speed-ups (against the same mode, and against the
    fastest naive mode of the policy, the fair one)."""

    keras.utils.set_random_seed(0)
    net, _ = build("float32", args.channels, args.stacks)
    print(
        f"backend={BACKEND} receptive_field={net.receptive_field} "
        f"channels={args.channels} batch=1 naive_samples="
        f"{args.naive_samples} stream_steps={args.stream_steps} "
        f"repeats={args.repeats}"
    )
    rows = []
    for policy in args.policies.split(","):
        for mode in args.modes.split(","):
            net, head = build(policy, args.channels, args.stacks)
            naive = time_naive(
                net, head, args.channels, mode, args.naive_samples
            )
            stream = time_streaming(
                net, head, args.channels, mode, args.stream_steps, args.repeats
            )
            rows.append((policy, mode, naive, stream))
            print(
                f"{policy:15s} {mode:5s} naive {naive * 1e3:10.2f} ms/sample"
                f"  streaming {stream * 1e3:8.3f} ms/sample"
                f"  speed-up {naive / stream:8.0f}x",
                flush=True,
            )
    # The fair ratio: each streaming figure against the fastest naive mode
    # of the same policy.
    best_naive = {}
    for policy, _, naive, _ in rows:
        best_naive[policy] = min(naive, best_naive.get(policy, naive))
    records = [
        {
            "policy": policy,
            "mode": mode,
            "naive ms/sample": naive * 1e3,
            "streaming ms/sample": stream * 1e3,
            "speed-up (same mode)": naive / stream,
            "speed-up vs best naive": best_naive[policy] / stream,
        }
        for policy, mode, naive, stream in rows
    ]
    print()
    print("| " + " | ".join(records[0]) + " |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for record in records:
        print(
            f"| {record['policy']} | {record['mode']} "
            f"| {record['naive ms/sample']:.2f} "
            f"| {record['streaming ms/sample']:.3f} "
            f"| {record['speed-up (same mode)']:.0f}x "
            f"| {record['speed-up vs best naive']:.0f}x |"
        )
    return records


if __name__ == "__main__":
    main()
