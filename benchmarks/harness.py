"""Side-by-side timing: interleaved runs, medians, ratios in one process.

This machine is noisy, so candidates are timed in alternation (A, B, A, B,
...) and each figure is the median of many repeats. On the TensorFlow backend
"graph" is `tf.function` and "xla" is `tf.function(jit_compile=True)`; on JAX
every mode is `jax.jit` (XLA).
"""

import statistics
import time

import keras
import numpy as np
from keras import ops

BACKEND = keras.backend.backend()


def _compile(fn, mode):
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=(mode == "xla"))
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    raise NotImplementedError(BACKEND)


def make_runner(layer, inputs, mode, backward):
    """A no-argument callable running `layer(**inputs)` (and its gradient).

    Args:
        layer: a built-or-not Keras layer (or any callable of keras ops).
        inputs: dict of float32 arrays, passed as keyword arguments.
        mode: "graph" or "xla".
        backward: bool, also compute gradients w.r.t. inputs and weights.
    """
    names = sorted(inputs)
    tensors = [ops.convert_to_tensor(inputs[k]) for k in names]
    # Build the weights outside the compiled function.
    layer(**dict(zip(names, tensors)))

    if BACKEND == "tensorflow":
        import tensorflow as tf

        def forward(*xs):
            return layer(**dict(zip(names, xs)))

        def forward_backward(*xs):
            with tf.GradientTape() as tape:
                tape.watch(xs)
                out = forward(*xs)
                loss = tf.reduce_sum(tf.cast(out, "float32"))
            variables = [v.value for v in layer.trainable_variables]
            return tape.gradient(loss, list(xs) + variables)

        fn = _compile(forward_backward if backward else forward, mode)
    else:
        import jax

        trainable = [v.value for v in layer.trainable_variables]
        non_trainable = [v.value for v in layer.non_trainable_variables]

        def loss_fn(weights, *xs):
            out, _ = layer.stateless_call(
                weights, non_trainable, **dict(zip(names, xs))
            )
            return jax.numpy.sum(out.astype("float32")), out

        # Weights are arguments, not closed-over constants: XLA would
        # otherwise constant-fold weight-only work (and take minutes).
        if backward:
            grad = jax.grad(
                loss_fn, argnums=tuple(range(len(names) + 1)), has_aux=True
            )
            jitted = _compile(lambda w, *xs: grad(w, *xs)[0], mode)
        else:
            jitted = _compile(lambda w, *xs: loss_fn(w, *xs)[1], mode)

        def fn(*xs):
            return jitted(trainable, *xs)

    def run():
        out = fn(*tensors)
        # Block until the result exists (JAX dispatches asynchronously).
        # The first array of a possibly nested result (JAX gradients are a
        # tuple whose first item is the list of weight gradients).
        leaf = keras.tree.flatten(out)[0]
        ops.convert_to_numpy(ops.sum(ops.cast(leaf, "float32")))

    return run


def median_times(runners, repeats=20, warmup=3):
    """Times each runner `repeats` times, interleaved; returns medians (s)."""
    for run in runners.values():
        for _ in range(warmup):
            run()
    samples = {name: [] for name in runners}
    for _ in range(repeats):
        for name, run in runners.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def compare(
    title,
    candidates,
    inputs,
    baseline,
    policies=("float32", "mixed_bfloat16"),
    modes=("graph", "xla"),
    repeats=20,
    forward_only=None,
):
    """Prints a table of medians and ratios; returns the rows.

    Args:
        title: str printed above the table.
        candidates: dict name -> `make(dtype_policy) -> layer`.
        inputs: dict of arrays passed to every layer as keyword arguments.
        baseline: the candidate name whose best mode (per policy and pass)
            is the denominator of every ratio ("x faster than baseline").
        policies, modes: what to measure.
        repeats: timed repeats per configuration.
        forward_only: optional dict name -> reason: candidates left out of
            the forward+backward pass (e.g. no gradient reaches their
            weights), with the reason printed.

    Returns:
        A list of dicts (one per measurement) with the medians and ratios.
    """
    if BACKEND == "jax":
        modes = ("xla",)
    rows = []
    print(f"\n## {title}  (backend={BACKEND}, median of {repeats})")
    print(
        f"{'pass':<17}{'policy':<16}{'candidate':<28}{'mode':<7}"
        f"{'ms':>9}{'vs best baseline':>18}"
    )
    forward_only = forward_only or {}
    for backward in (False, True):
        if backward:
            for name, reason in forward_only.items():
                print(f"fwd+bwd skipped for {name}: {reason}")
        for policy in policies:
            runners = {}
            for name, make in candidates.items():
                if backward and name in forward_only:
                    continue
                for mode in modes:
                    runners[(name, mode)] = make_runner(
                        make(policy), inputs, mode, backward
                    )
            times = median_times(runners, repeats=repeats)
            best_base = min(t for (n, _), t in times.items() if n == baseline)
            for (name, mode), t in times.items():
                row = {
                    "pass": "fwd+bwd" if backward else "forward",
                    "policy": policy,
                    "candidate": name,
                    "mode": mode,
                    "ms": 1e3 * t,
                    "ratio": best_base / t,
                }
                rows.append(row)
                print(
                    f"{row['pass']:<17}{policy:<16}{name:<28}{mode:<7}"
                    f"{row['ms']:>9.2f}{row['ratio']:>17.2f}x"
                )
    return rows


def random_inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {
        k: rng.standard_normal(s).astype("float32") for k, s in shapes.items()
    }
