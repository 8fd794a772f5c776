"""What the speed benchmarks share: flags, compiling, timing, result files.

This machine is noisy, so candidates are timed in alternation (A, B, A, B,
...) and each figure is the median of many repeats. On the TensorFlow backend
"graph" is `tf.function` and "xla" is `tf.function(jit_compile=True)`; on JAX
every mode is `jax.jit` (XLA).

- `parser(doc, repeats=N)`: the common flags (`--repeats`, `--out`;
  `serving_parser`: those of the two serving benchmarks);
  `run(__file__, parser, body, argv)`: `body(args)`, and with `--out DIR`
  what it printed as `DIR/NAME.txt` and what it returned as
  `DIR/NAME.json` (`write_json`), the files the benchmark pages show.
- `compiled(fn, mode)`: `fn` compiled for the current backend.
- `interleaved_samples`, `median_times`: runners timed in alternation.
- `make_runner`, `compare`, `same_mode_ratios`: a layer's forward (and
  backward) pass, and tables of candidates' medians and ratios against a
  baseline (its best mode, or the same mode).
- `EpochTimer`: wall time per `fit` epoch (the training benchmarks).
- `query_key_projections`: the `Dense` projections of the Bahdanau
  baselines built from Keras layers.
"""

import argparse
import contextlib
import datetime
import importlib.metadata
import io
import json
import os
import platform
import shlex
import statistics
import sys
import time

import keras
import numpy as np
from keras import ops

from attention_zoo.export.atomic_file import atomic_write

BACKEND = keras.backend.backend()
# The repository root (the working directory of `python -m benchmarks.NAME`).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- flags and result files -------------------------------------------------


def parser(doc, repeats=None, out=None, out_help=None, **kwargs):
    """An `ArgumentParser` described by `doc`'s first line, with `--out`
    (default `out`) and, given a default number of `repeats`,
    `--repeats`; `kwargs` go to `ArgumentParser`."""
    result = argparse.ArgumentParser(description=doc.split("\n")[0], **kwargs)
    if repeats is not None:
        result.add_argument(
            "--repeats",
            type=int,
            default=repeats,
            help=f"timed repeats, medians taken (default {repeats})",
        )
    result.add_argument(
        "--out",
        default=out,
        help=out_help
        or "a folder for NAME.txt (what is printed, after the command) "
        "and NAME.json (the results); default: print only",
    )
    return result


def serving_parser(doc, name, batching, out_help):
    """The serving benchmarks' `parser`: `--protocols`, `--batching`
    (`batching` is the default order) and `--out`, by default
    `outputs/NAME` in the repository."""
    result = parser(
        doc,
        out=os.path.join(ROOT, "outputs", name),
        out_help=out_help,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    result.add_argument(
        "--protocols",
        nargs="+",
        choices=("rest", "grpc"),
        default=["rest", "grpc"],
    )
    result.add_argument(
        "--batching", nargs="+", choices=("on", "off"), default=batching
    )
    return result


def command_line(name, argv=None, package="benchmarks"):
    """The command that runs `package.name` (a benchmark; an experiment
    with `package="experiments"`) with `argv` (by default this process's
    arguments), as the result files record it."""
    arguments = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", "-m", f"{package}.{name}", *arguments])


def run(script, argument_parser, body, argv=None):
    """Parses `argv`, returns `body(args)`; with `--out DIR`, also writes
    `DIR/NAME.txt` (the command line, then all that was printed) and
    `DIR/NAME.json` (the result), `NAME` being the module of `script`
    (the benchmark's `__file__`; the experiments' too). Each file is
    replaced whole (`atomic_write`): a kill or a full disk leaves the
    previous one, never a cut one."""
    args = argument_parser.parse_args(argv)
    if not getattr(args, "out", None):
        return body(args)
    name = os.path.splitext(os.path.basename(script))[0]
    package = os.path.basename(os.path.dirname(os.path.abspath(script)))
    command = command_line(name, argv, package)
    printed = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, printed)):
        result = body(args)
    os.makedirs(args.out, exist_ok=True)
    with atomic_write(os.path.join(args.out, f"{name}.txt")) as file:
        file.write(
            f"Command: `KERAS_BACKEND={BACKEND} {command}` "
            f"({datetime.date.today().isoformat()})\n{printed.getvalue()}"
        )
    write_json(args.out, name, result, command=command)
    return result


class _Tee(io.TextIOBase):
    """Writes to every stream it is given."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


def _jsonable(value):
    """`value` with tuple keys joined, tuples as lists, NumPy as Python."""
    if isinstance(value, dict):
        return {
            " / ".join(map(str, k)) if isinstance(k, tuple) else str(k): (
                _jsonable(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def machine():
    """What a figure was measured on: the date, the CPU, its cores and the
    versions of the stack (the pages of docs/benchmarks/ name it)."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as file:
            names = [
                line.split(":", 1)[1].strip()
                for line in file
                if line.startswith("model name")
            ]
        cpu = names[0] if names else cpu
    versions = {}
    for package in ("tensorflow", "keras", "jax"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[package] = importlib.metadata.version(package)
    return {
        "date": datetime.date.today().isoformat(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "devices": [
            str(device) for device in keras.distribution.list_devices()
        ],
        **versions,
    }


def write_json(out, name, result, **fields):
    """Writes `OUT/NAME.json`: `fields`, the backend, the `machine()` and
    `result`."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{name}.json")
    document = {
        **fields,
        "backend": BACKEND,
        "machine": machine(),
        "result": _jsonable(result),
    }
    with atomic_write(path) as file:
        json.dump(document, file, indent=1, default=str)
    return path


# -- compiling and timing ----------------------------------------------------


def compiled(fn, mode="xla", autograph=True):
    """`fn` compiled for the current backend: `tf.function` ("graph") or
    `tf.function(jit_compile=True)` ("xla") on TensorFlow, `jax.jit` on
    JAX (whatever the mode)."""
    if BACKEND == "tensorflow":
        return _tensorflow().function(
            fn, jit_compile=(mode == "xla"), autograph=autograph
        )
    if BACKEND == "jax":
        return _jax().jit(fn)
    raise NotImplementedError(BACKEND)


def _tensorflow():
    """TensorFlow, imported on the TensorFlow backend only."""
    # lazy: keeps JAX runs free of TensorFlow's start-up (about 2.5 s)
    import tensorflow

    return tensorflow


def _jax():
    """JAX, imported on the JAX backend only."""
    # lazy: jax is no dependency (test extra), needed on its backend only
    import jax

    return jax


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
        tf = _tensorflow()

        def forward(*xs):
            return layer(**dict(zip(names, xs)))

        def forward_backward(*xs):
            with tf.GradientTape() as tape:
                tape.watch(xs)
                out = forward(*xs)
                loss = tf.reduce_sum(tf.cast(out, "float32"))
            variables = [v.value for v in layer.trainable_variables]
            return tape.gradient(loss, list(xs) + variables)

        fn = compiled(forward_backward if backward else forward, mode)
    else:
        jax = _jax()

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
            jitted = compiled(lambda w, *xs: grad(w, *xs)[0], mode)
        else:
            jitted = compiled(lambda w, *xs: loss_fn(w, *xs)[1], mode)

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


def cycling(run, inputs):
    """A no-argument runner for `interleaved_samples`: each call returns
    `run(input)` with the next of `inputs`, from the first again after the
    last (so `warmup=len(inputs)` meets every input once)."""
    count = [0]

    def call():
        index = count[0] % len(inputs)
        count[0] += 1
        return run(inputs[index])

    return call


def interleaved_samples(runners, repeats, warmup=0):
    """Calls each no-argument runner `warmup` times, then times them in
    alternation (A, B, A, B, ...) for `repeats` rounds; returns each
    runner's list of seconds per call."""
    for run in runners.values():
        for _ in range(warmup):
            run()
    samples = {name: [] for name in runners}
    for _ in range(repeats):
        for name, run in runners.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return samples


def serve_texts(serve, name, values, output, batch=32):
    """`serve`'s string `output` for the inputs `values` of its input
    `name`, `batch` of them a call, decoded as UTF-8."""
    texts = []
    for start in range(0, len(values), batch):
        call = _tensorflow().constant(values[start : start + batch])
        texts += serve(**{name: call})[output].numpy().tolist()
    return [text.decode("utf-8") for text in texts]


def export_speed_rows(serves, calls_of, output, batches, repeats):
    """Each export's median ms per call at each batch size, and its
    speed-up over the first export: rows `{batch, export, ms per call,
    speed-up}`. `serves` maps export names to `serving_default`
    signatures; `calls_of(batch)` gives the calls' keyword arguments;
    a call waits for the signature's `output`. The exports are called in
    alternation (`interleaved_samples`), each call made once first (XLA
    compiles once per shape) and 3 more."""
    rows = []
    first = next(iter(serves))
    for batch in batches:
        calls = calls_of(batch)
        runners = {
            name: cycling(
                lambda kwargs, serve=serve: serve(**kwargs)[output].numpy(),
                calls,
            )
            for name, serve in serves.items()
        }
        samples = interleaved_samples(runners, repeats, len(calls) + 3)
        medians = {
            name: 1e3 * statistics.median(seconds)
            for name, seconds in samples.items()
        }
        for name, median in medians.items():
            rows.append(
                {
                    "batch": batch,
                    "export": name,
                    "ms per call": round(median, 2),
                    "speed-up": round(medians[first] / median, 2),
                }
            )
    return rows


def median_times(runners, repeats=20, warmup=3):
    """Times each runner `repeats` times, interleaved; returns medians (s)."""
    samples = interleaved_samples(runners, repeats, warmup)
    return {name: statistics.median(s) for name, s in samples.items()}


class EpochTimer(keras.callbacks.Callback):
    """Wall time of every `fit` epoch, in `times` (an epoch's end waits
    for its steps on JAX too: its logs are read)."""

    def __init__(self):
        super().__init__()
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._start)


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


def same_mode_ratios(rows, baseline):
    """Prints baseline ms / candidate ms for `compare`'s rows, each pair
    compiled the same way."""
    times = {
        (r["pass"], r["policy"], r["candidate"], r["mode"]): r["ms"]
        for r in rows
    }
    print(f"\nsame mode: {baseline} ms / candidate ms")
    for (pas, policy, name, mode), ms in times.items():
        if name != baseline:
            base = times[(pas, policy, baseline, mode)]
            print(f"{pas:<9}{policy:<16}{name:<28}{mode:<7}{base / ms:>6.2f}x")


def random_inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {
        k: rng.standard_normal(s).astype("float32") for k, s in shapes.items()
    }


def query_key_projections(units, policy):
    """The Bahdanau projections as Keras layers: `W_q` (`"query"`, no
    bias) and `W_k` with the bias `b` (`"key"`)."""
    query = keras.layers.Dense(
        units, use_bias=False, dtype=policy, name="query"
    )
    key = keras.layers.Dense(units, dtype=policy, name="key")
    return query, key
