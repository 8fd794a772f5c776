"""The GPU check: one run, on JAX, of every figure a GPU machine should give.

On a GPU machine with JAX (CUDA) but no Keras or TensorFlow, from the
repository root:

    pip install --no-deps -r benchmarks/gpu/requirements.txt
    KERAS_BACKEND=jax python -m benchmarks.gpu.gpu_check --out outputs/gpu

(`requirements.txt` lists Keras and its small dependencies, all the
project's layers need; with no index there, install them from wheels
downloaded beside it: `pip download --no-deps -d wheels -r ...` here,
then `pip install --no-index --find-links wheels -r ...` there.) With
`--tiny` it runs everything at toy sizes, on any JAX device, in seconds:
CI does so on the CPU so that the script cannot rot.

Four sections, each timed in alternation, medians of `--repeats`:

1. **Layers.** `MultiHead` against `keras.layers.MultiHeadAttention`
   (both reach `ops.dot_product_attention`, where Keras takes its fused
   flash path on GPUs that have it), self-attention, float32 and
   mixed_bfloat16, forward and forward+backward, at sequence lengths 512
   to 4096 (`harness.compare`).
2. **Decoding.** A Transformer translator's greedy and beam-4 searches
   compiled whole (`attention_zoo.decoding.decode`) against a Python loop
   of compiled steps, every step run (no END).
3. **WaveNet.** Streaming generation (`autoregressive_generate`, one
   compiled loop over cached activations) against recomputing the
   receptive field per sample (`benchmarks.wavenet_generation_bench`).
4. **Training.** One step (forward and backward) of each application's
   model on random NumPy batches: examples per second, the step's
   floating-point operations from XLA's cost analysis, and the share of
   the device's bfloat16 peak (`PEAK_BF16_TFLOPS`, or `--peak-tflops`)
   they reach.

With `--out DIR` it writes `DIR/gpu_check.json` (every figure, the device
named) and `DIR/gpu_check.txt` (what it printed).
"""

import os
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from attention_zoo.decoding import decode  # noqa: E402
from attention_zoo.decoding.searches import BeamSearch  # noqa: E402
from attention_zoo.decoding.searches import Greedy  # noqa: E402
from attention_zoo.layers import MultiHead  # noqa: E402
from attention_zoo_apps.captioning.model import build_captioner  # noqa: E402
from attention_zoo_apps.common import precision  # noqa: E402
from attention_zoo_apps.ehr.model import build_risk_model  # noqa: E402
from attention_zoo_apps.entailment.model import build_decomposable_attention  # noqa: E402
from attention_zoo_apps.translation.config import TranslationConfig  # noqa: E402
from attention_zoo_apps.translation.model import build_translation_model  # noqa: E402
from attention_zoo_apps.translation.model import model_adapter  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import wavenet_generation_bench as wavenet  # noqa: E402

# Dense bfloat16 peaks (TFLOP/s, without sparsity) of the GPUs the check
# may meet, from their data sheets; others: `--peak-tflops`.
PEAK_BF16_TFLOPS = {
    "NVIDIA H200": 989.0,
    "NVIDIA H100 80GB HBM3": 989.0,
    "NVIDIA H100 PCIe": 756.0,
    "NVIDIA A100-SXM4-80GB": 312.0,
    "NVIDIA A100-SXM4-40GB": 312.0,
    "NVIDIA L4": 121.0,
}
# Sizes: the full run's, and `--tiny`'s.
SIZES = {
    "full": dict(
        lengths=(512, 1024, 2048, 4096),
        layer_batch=8,
        width=512,
        heads=8,
        decode_batch=64,
        source_length=32,
        max_length=32,
        vocabulary=8000,
        model=dict(model_dim=256, num_heads=4, feed_forward_dim=1024),
        stream_steps=1000,
        naive_samples=20,
        train_batch=256,
        image_size=224,
        train_policies=("float32", "mixed_bfloat16"),
    ),
    "tiny": dict(
        lengths=(8,),
        layer_batch=2,
        width=8,
        heads=2,
        decode_batch=2,
        source_length=4,
        max_length=3,
        vocabulary=50,
        model=dict(model_dim=8, num_heads=2, feed_forward_dim=8),
        stream_steps=4,
        naive_samples=2,
        train_batch=2,
        image_size=32,
        # The float32 models compile as every other test's do.
        train_policies=("mixed_bfloat16",),
    ),
}
START_ID = 2


def _parser():
    parser = harness.parser(__doc__, repeats=10)
    parser.add_argument(
        "--tiny", action="store_true", help="toy sizes (CI, on the CPU)"
    )
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=("layers", "decoding", "wavenet", "training"),
        default=["layers", "decoding", "wavenet", "training"],
    )
    parser.add_argument(
        "--peak-tflops",
        type=float,
        help="the device's dense bfloat16 peak, TFLOP/s (default: "
        "PEAK_BF16_TFLOPS by device name)",
    )
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), measure, argv)


def measure(args):
    device = jax.devices()[0]
    sizes = SIZES["tiny" if args.tiny else "full"]
    peak = args.peak_tflops or PEAK_BF16_TFLOPS.get(device.device_kind)
    print(
        f"device: {device.device_kind} ({device.platform}, "
        f"{jax.device_count()} devices); jax {jax.__version__}, keras "
        f"{keras.__version__}; bf16 peak {peak} TFLOP/s",
        flush=True,
    )
    result = {
        "device": device.device_kind,
        "platform": device.platform,
        "sizes": "tiny" if args.tiny else "full",
        "peak_bf16_tflops": peak,
    }
    sections = {
        "layers": _layers,
        "decoding": _decoding,
        "wavenet": _wavenet,
        "training": _training,
    }
    for name in args.sections:
        start = time.perf_counter()
        result[name] = sections[name](args, sizes, peak)
        print(f"[{name}: {time.perf_counter() - start:.0f} s]", flush=True)
    return result


# -- 1. layers ---------------------------------------------------------------


def _layers(args, sizes, peak):
    width, heads = sizes["width"], sizes["heads"]
    rows = []
    for length in sizes["lengths"]:
        inputs = harness.random_inputs(
            {
                "query": (sizes["layer_batch"], length, width),
                "value": (sizes["layer_batch"], length, width),
            }
        )
        candidates = {
            "keras.MultiHeadAttention": lambda policy: (
                keras.layers.MultiHeadAttention(
                    heads, width // heads, dtype=policy
                )
            ),
            "MultiHead": lambda policy: MultiHead(
                heads, width // heads, dtype=policy
            ),
        }
        found = harness.compare(
            f"self-attention B={sizes['layer_batch']} T={length} d={width} "
            f"H={heads}",
            candidates,
            inputs,
            baseline="keras.MultiHeadAttention",
            repeats=args.repeats,
        )
        rows += [dict(row, length=length) for row in found]
    return rows


# -- 2. decoding -------------------------------------------------------------


def _translator(sizes):
    config = TranslationConfig(
        model="transformer",
        max_length=sizes["max_length"] + 1,
        num_layers=2,
        **sizes["model"],
    )
    vocabulary = sizes["vocabulary"]
    model = build_translation_model(config, vocabulary, vocabulary)
    return model, model_adapter(model, config)


def _greedy_loop(adapter, steps):
    """Greedy search as a Python loop of compiled steps (every step run):
    a function of the source ids, its steps compiled once."""
    encode = jax.jit(adapter.encode)

    @jax.jit
    def step(tokens, state, memory, index):
        logits, state, _ = adapter.step(tokens, state, memory, index)
        return ops.cast(ops.argmax(logits, axis=-1), "int32"), state

    def run(source):
        memory = encode(source)
        state = adapter.initial_state(memory)
        tokens = ops.full((source.shape[0],), START_ID, "int32")
        found = []
        for index in range(steps):
            tokens, state = step(tokens, state, memory, index)
            found.append(tokens)
        return ops.stack(found, axis=1)

    return run


def _beam_loop(adapter, steps, beams):
    """Beam search as a Python loop of compiled steps: each step scores
    every beam's continuations and keeps the `beams` best (no length
    penalty, every step run). A function of the source ids."""
    encode = jax.jit(adapter.encode)

    @jax.jit
    def step(tokens, state, scores, memory, index):
        batch = scores.shape[0] // beams
        logits, state, _ = adapter.step(tokens, state, memory, index)
        vocabulary = logits.shape[-1]
        total = scores[:, None] + jax.nn.log_softmax(
            ops.cast(logits, "float32"), axis=-1
        )
        best, flat = jax.lax.top_k(
            total.reshape(batch, beams * vocabulary), beams
        )
        origin = flat // vocabulary + beams * np.arange(batch)[:, None]
        state = jax.tree_util.tree_map(lambda s: s[origin.reshape(-1)], state)
        tokens = (flat % vocabulary).reshape(-1).astype("int32")
        return tokens, state, best.reshape(-1)

    def run(source):
        batch = source.shape[0]
        memory = encode(np.repeat(source, beams, axis=0))
        state = adapter.initial_state(memory)
        tokens = ops.full((batch * beams,), START_ID, "int32")
        # Only the first beam of each input is live at the start.
        scores = np.tile([0.0] + [-1e9] * (beams - 1), batch)
        scores = scores.astype("float32")
        for index in range(steps):
            tokens, state, scores = step(tokens, state, scores, memory, index)
        return scores

    return run


def _decoding(args, sizes, peak):
    keras.utils.set_random_seed(0)
    _, adapter = _translator(sizes)
    rng = np.random.default_rng(0)
    source = rng.integers(
        4,
        sizes["vocabulary"],
        (sizes["decode_batch"], sizes["source_length"]),
    ).astype("int32")
    steps = sizes["max_length"]
    # END is an id the model never writes (past its vocabulary): every
    # search runs all `steps` steps, as the loops do.
    never = sizes["vocabulary"] + 1
    greedy_loop = _greedy_loop(adapter, steps)
    beam_loop = _beam_loop(adapter, steps, 4)
    runs = {
        "greedy, compiled whole": lambda: decode(
            adapter, source, Greedy(), start_id=START_ID, end_id=never,
            max_length=steps,
        )["tokens"],
        "greedy, Python loop": lambda: greedy_loop(source),
        "beam 4, compiled whole": lambda: decode(
            adapter, source, BeamSearch(4, 0.0), start_id=START_ID,
            end_id=never, max_length=steps,
        )["tokens"],
        "beam 4, Python loop": lambda: beam_loop(source),
    }  # fmt: skip
    runners = {
        name: (lambda run=run: np.asarray(run())) for name, run in runs.items()
    }
    times = harness.median_times(runners, repeats=args.repeats, warmup=1)
    rows = []
    for name, seconds in times.items():
        search = name.split(",")[0]
        loop = times[f"{search}, Python loop"]
        rows.append(
            {
                "search": name,
                "ms per batch": round(1e3 * seconds, 3),
                "speed-up over the loop": round(loop / seconds, 2),
            }
        )
        print(
            f"{name:24s} {1e3 * seconds:10.2f} ms per batch of "
            f"{sizes['decode_batch']} ({steps} steps)  "
            f"{loop / seconds:6.1f}x the loop",
            flush=True,
        )
    return rows


# -- 3. WaveNet --------------------------------------------------------------


def _wavenet(args, sizes, peak):
    rows = []
    for policy in ("float32", "mixed_bfloat16"):
        keras.utils.set_random_seed(0)
        net, head = wavenet.build(policy, 1, 1 if args.tiny else 3)
        naive = wavenet.time_naive(net, head, 1, "xla", sizes["naive_samples"])
        stream = wavenet.time_streaming(
            net, head, 1, "xla", sizes["stream_steps"], args.repeats
        )
        rows.append(
            {
                "policy": policy,
                "naive ms per sample": round(1e3 * naive, 4),
                "streaming ms per sample": round(1e3 * stream, 4),
                "speed-up": round(naive / stream, 1),
            }
        )
        print(
            f"WaveNet {policy:15s} naive {1e3 * naive:9.3f} ms/sample  "
            f"streaming {1e3 * stream:8.4f} ms/sample  "
            f"{naive / stream:7.0f}x",
            flush=True,
        )
    return rows


# -- 4. training -------------------------------------------------------------


def _application_models(sizes):
    """Each application's model at its shipped sizes (`--tiny`: toy)."""
    tiny = sizes is SIZES["tiny"]
    vocabulary = sizes["vocabulary"]
    config = TranslationConfig(model="transformer", **sizes["model"])
    units = 8 if tiny else 256
    return {
        "translation (Transformer)": build_translation_model(
            config, vocabulary, vocabulary
        ),
        "translation (GRU, additive)": build_translation_model(
            TranslationConfig(embedding_dim=units, units=units),
            vocabulary,
            vocabulary,
        ),
        "entailment": build_decomposable_attention(
            vocabulary,
            embedding_dim=units,
            hidden_units=units,
            intra_attention=True,
            num_classes=3,
        ),
        "ehr": build_risk_model(
            vocabulary, embedding_dim=units // 2, units=units // 2
        ),
        "captioning": build_captioner(
            vocabulary,
            image_size=sizes["image_size"],
            embedding_dim=units,
            units=units,
            encoder_weights=None,
        ),
    }


def _random_batch(model, batch, vocabulary, length):
    """Random inputs for `model.inputs`: ids below `vocabulary` for int
    inputs, normal floats otherwise; unknown axes `length` long."""
    rng = np.random.default_rng(0)
    arrays = {}
    for tensor in model.inputs:
        shape = [batch] + [d or length for d in tensor.shape[1:]]
        if "int" in str(tensor.dtype):
            arrays[tensor.name] = rng.integers(1, vocabulary, shape).astype(
                "int32"
            )
        else:
            arrays[tensor.name] = rng.standard_normal(shape).astype("float32")
    if len(arrays) == 1:
        return next(iter(arrays.values()))
    return arrays


def _train_step(model):
    """Forward and backward of a mean-square loss of the outputs (the
    cost is the model's): `(trainable, non_trainable, inputs) ->
    gradients`, compiled with `jax.jit`."""

    def loss(trainable, non_trainable, inputs):
        outputs, _ = model.stateless_call(
            trainable, non_trainable, inputs, training=True
        )
        return sum(
            ops.mean(ops.square(ops.cast(out, "float32")))
            for out in jax.tree_util.tree_leaves(outputs)
        )

    return jax.jit(jax.grad(loss))


def _training(args, sizes, peak):
    rows = []
    for policy in sizes["train_policies"]:
        with precision.policy_scope(policy):
            models = _application_models(sizes)
        for name, model in models.items():
            rows.append(_time_step(args, sizes, peak, name, model, policy))
    return rows


def _time_step(args, sizes, peak, name, model, policy):
    batch = sizes["train_batch"]
    inputs = _random_batch(model, batch, sizes["vocabulary"], 32)
    step = _train_step(model)
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    compiled = step.lower(trainable, non_trainable, inputs).compile()
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    flops = float((cost or {}).get("flops", 0.0))

    def run():
        jax.block_until_ready(compiled(trainable, non_trainable, inputs))

    seconds = harness.median_times({name: run}, repeats=args.repeats, warmup=1)[
        name
    ]
    tflops = flops / seconds / 1e12
    row = {
        "application": name,
        "policy": policy,
        "parameters": model.count_params(),
        "batch": batch,
        "ms per step": round(1e3 * seconds, 3),
        "examples per s": round(batch / seconds, 1),
        "FLOP per step": int(flops),
        "TFLOP/s": round(tflops, 3),
        "share of bf16 peak": round(tflops / peak, 4) if peak else None,
    }
    print(
        f"{name:28s} {policy:15s} {1e3 * seconds:9.2f} ms/step "
        f"{batch / seconds:10.0f} examples/s {tflops:8.2f} TFLOP/s",
        flush=True,
    )
    return row


if __name__ == "__main__":
    main()
