"""The benchmark pages of the documentation site, made from result files.

    python -m benchmarks.pages [--results DIR] [--out DIR]

Every speed benchmark writes its results with `--out DIR` (`DIR/NAME.json`:
the command, the backend, the machine and the result, `harness.write_json`).
The results quoted by the site are kept in `docs/benchmarks/results/`
(`tensorflow/NAME.json`, `jax/NAME.json`); this script turns them into one
page per topic, `docs/benchmarks/TOPIC.md`: what the figures mean (the
`TOPICS` below), then for each result its command, machine and date and
its tables, made from the file and never typed in. `tests/benchmarks/
pages_test.py` checks that the committed pages are what this script makes
from the committed results.

Tables: a list of flat records is one table (its keys are the columns); a
mapping of such lists is a table per key; a mapping of numbers is a
two-column table; a list of numbers (a benchmark's raw samples) becomes its
median and 95th percentile. Times are scaled and named as the section says
(`Section.unit`).
"""

import argparse
import dataclasses
import json
import os

import numpy as np

from attention_zoo.export.atomic_file import atomic_write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "benchmarks", "results")
PAGES = os.path.join(ROOT, "docs", "benchmarks")
BACKENDS = ("tensorflow", "jax")


@dataclasses.dataclass(frozen=True)
class Section:
    """One benchmark's results on a page.

    Attributes:
        name: the benchmark module (`benchmarks/NAME.py`, result
            `NAME.json`).
        meaning: one or two sentences: what a figure says.
        unit: how plain numbers of the result are shown: `("ms", 1e3)`
            multiplies seconds by 1,000 and names the column "ms"; None
            shows them as they are (the result's own keys name units).
        baseline: for a result that maps names to times, the name whose
            time the others are compared to (a "speed-up vs" column).
        notes: short paragraphs shown after the tables: why the figures
            are what they are, and what was tried and dropped (the
            findings of earlier runs, which git's history keeps).
        hidden: keys of the result left out of the tables, at any depth
            (details kept for debugging, such as error texts).
        view: a function of the result giving what the tables show
            (medians of rounds, say), or None for the result itself.
    """

    name: str
    meaning: str
    unit: tuple = None
    baseline: str = None
    notes: tuple = ()
    hidden: tuple = ()
    view: object = None


@dataclasses.dataclass(frozen=True)
class Topic:
    slug: str
    title: str
    intro: str
    sections: tuple


# -- views of results ------------------------------------------------------


def median_cells(cells):
    """`serving_load`'s cells of several rounds merged: medians of the
    figures, sums of the errors, a row per (protocol, clients, batching)."""
    merged = {}
    for cell in cells:
        key = (cell["protocol"], cell["clients"], cell["batching"])
        merged.setdefault(key, []).append(cell)
    rows = []
    for (protocol, clients, batching), group in merged.items():
        row = {"protocol": protocol, "clients": clients, "batching": batching}
        for name in (
            "requests_per_s",
            "p50_ms",
            "p99_ms",
            "mean_batch_size",
            "server_cpu_percent",
            "client_cpu_percent",
            "server_cpu_ms_per_request",
            "load_average",
        ):
            row[name] = float(np.median([cell[name] for cell in group]))
        row["errors"] = sum(cell["errors"] for cell in group)
        row["wrong"] = sum(cell["wrong"] for cell in group)
        rows.append(row)
    return rows


def _serving_load_view(result):
    """Per application: the export called in process, then the served
    cells as medians over the rounds."""
    return {
        application: {
            "in process": found["ceiling"],
            "served (medians of the rounds)": sorted(
                median_cells(found["cells"]),
                key=lambda r: (r["protocol"], r["clients"], r["batching"]),
            ),
        }
        for application, found in result["applications"].items()
    }


def _quality_rows(result, scores, same, total):
    """An export benchmark's quality table: a row per export with its
    `scores` (column -> key of a quality row) and how many of its outputs
    are the first export's (`same`: the key, named after it; out of
    `result[total]`)."""
    first = result["quality"][0]["export"]
    return [
        {
            "export": row["export"],
            **{column: row[key] for column, key in scores.items()},
            f"{same} as {first}": f"{row[same]:,} of {result[total]:,}",
        }
        for row in result["quality"]
    ]


def _int8_export_view(result):
    """`int8_export_bench`: a quality table (a row per export) and the
    speed rows, under the model and the oneDNN kernels seen."""
    quality = _quality_rows(
        result,
        {"BLEU": "bleu", "chrF": "chrf"},
        "same translations",
        "sentences",
    )
    kernels = ", ".join(result["kernels"]) or "none (not oneDNN)"
    title = f"{result['model']}, oneDNN int8 kernels: {kernels}"
    return {title: {"quality": quality, "speed": result["rows"]}}


def _captioning_export_view(result):
    """`captioning_export_bench`: a quality table (a row per export) and
    the speed rows, under the model."""
    quality = _quality_rows(
        result,
        {"BLEU-4": "bleu_4", "CIDEr-D": "cider"},
        "same captions",
        "images",
    )
    title = f"{result['model']}, {result['images']:,} test images"
    return {title: {"quality": quality, "speed": result["rows"]}}


def _translation_serving_cost_view(result):
    """`translation_serving_cost`: the models' sizes under the sentences,
    then per search a quality row per export and the speed rows."""
    total = result["sentences"]
    view = {f"{total:,} test sentences": {"models": result["models"]}}
    for searched in result["searches"]:
        quality = [
            {
                "export": row["export"],
                "BLEU": row["bleu"],
                "chrF": row["chrf"],
                "same translations as its graph export": (
                    f"{row['same translations']:,} of {total:,}"
                ),
            }
            for row in searched["quality"]
        ]
        view[f"{searched['search']} search"] = {
            "quality": quality,
            "speed": searched["rows"],
        }
    return view


def _ctranslate2_view(result):
    """`ctranslate2_bench`: how many translations are the float32
    export's, then the timings."""
    sentences = result["sentences"]
    same = [
        {
            "candidate": name,
            "same translations as ours, float32": (
                f"{count:,} of {sentences:,}"
            ),
        }
        for name, count in result["same"].items()
    ]
    return {"outputs": same, "speed": result["rows"]}


TOPICS = (
    Topic(
        "attention-layers",
        "Attention layers against the Keras built-ins",
        "Each of our layers against the Keras layer that computes the same "
        "thing, forward and forward+backward, float32 and mixed_bfloat16, "
        "in TensorFlow graph mode and XLA (on JAX every mode is `jax.jit`). "
        "`ratio` is the built-in's fastest mode divided by this row's time: "
        "above 1, ours is faster than the best the built-in does here.",
        (
            Section(
                "attention_layers_bench",
                "Bahdanau (`AdditiveAttention`) against `Dense` projections "
                "and `keras.layers.AdditiveAttention`, Luong dot "
                "(`BilinearAttention`) against `keras.layers.Attention`.",
                notes=(
                    "`AdditiveAttention` contracts the `(B, Tq, Tv, units)`"
                    " tanh with its scoring vector as one matmul against a "
                    "`(units, 1)` column, where the tutorial composition "
                    "(and Keras) computes `scale * tanh(...)` and sums: two"
                    " passes over the 4-D tensor and a 4-D gradient for "
                    "`scale`. Under mixed precision that 4-D part runs in "
                    "float32, which was 1.3-2x faster than bfloat16 "
                    "element-wise work on this CPU and gives the softmax "
                    "float32 scores for free. An einsum `bqtu,u->bqt` and a"
                    " reshape to 2-D were tried and were slower "
                    "forward+backward.",
                    "`BilinearAttention(dot)` is at parity with "
                    "`keras.layers.Attention` although its softmax runs in "
                    "float32 under mixed_bfloat16 (Keras's runs in "
                    "bfloat16): the einsum `bqd,bkd->bqk` saves the "
                    "explicit transpose of `matmul(q, swapaxes(k))`. "
                    "Casting query and key to float32 for the scores was "
                    "tried and was slower.",
                ),
            ),
            Section(
                "multi_head_bench",
                "`MultiHead` self-attention against "
                "`keras.layers.MultiHeadAttention` with the same sizes.",
                notes=(
                    "On a CPU, `ops.dot_product_attention` is plain einsums"
                    " over `(B, T, H, D)` with a scaled float32 copy of the"
                    " scores and a full-size mask. `MultiHead` takes an "
                    "explicit path there (transpose to `(B, H, T, D)`, "
                    "batched `matmul`, float32 `masked_softmax`, `matmul`),"
                    " measured 1.1-1.4x faster on TensorFlow and 1.6x "
                    "forward on JAX, and uses `ops.dot_product_attention` "
                    "only when an accelerator is present (flash and cuDNN "
                    "kernels). `1/sqrt(key_dim)` is folded into the query "
                    "kernel and bias instead of scaling the scores, and "
                    "each projection is one 2-D `matmul`.",
                    "Tried and dropped (within noise or slower): einsum "
                    "projections, `matmul` on 3-D inputs, einsum attention "
                    "on `(B, T, H, D)`, one fused key/value projection "
                    "(faster forward, slower backward) and the whole "
                    "attention core in float32 under mixed_bfloat16. "
                    "mixed_bfloat16 forward is the tightest comparison: "
                    "both layers spend most of the attention time casting "
                    "the scores to float32 and back around the softmax. On "
                    "the TensorFlow backend XLA is no faster than graph "
                    "mode for either layer.",
                ),
            ),
            Section(
                "new_attention_layers_bench",
                "The layers without a Keras counterpart against the naive "
                "computation they replace (the baseline of each table).",
            ),
            Section(
                "grouped_query_bench",
                "Grouped-query and multi-query attention against full "
                "multi-head attention: the key/value cache's size and one "
                "decoding step's time.",
            ),
        ),
    ),
    Topic(
        "transformer-blocks",
        "Transformer blocks against keras-hub",
        "Our pre-norm encoder and decoder blocks against keras-hub's "
        "`TransformerEncoder`/`TransformerDecoder` with "
        '`normalize_first=True` (`pip install ".[benchmarks]"`). `ratio` '
        "as on the attention layers' page.",
        (
            Section(
                "transformer_blocks_bench",
                "Batch 16, length 64, width 256, 4 heads, feed-forward 1024.",
                notes=(
                    "Ours and keras-hub's blocks are at parity mode for mode, "
                    "within this machine's noise. Which mode wins depends on"
                    " the policy: in float32 XLA beats graph mode, under "
                    "mixed_bfloat16 graph mode wins (and is the fastest of "
                    "all). On a GPU the fused attention kernel may change "
                    "that; it has not been measured.",
                ),
            ),
        ),
    ),
    Topic(
        "decoding",
        "Decoding and generation loops",
        "Searches compiled whole (one XLA program for every step) against "
        "the Python loops of the tutorials, and streaming generation "
        "against recomputing the receptive field.",
        (
            Section(
                "greedy_decoding_bench",
                "Milliseconds per batch of 64 sentences of 20 tokens, for "
                "each way of running the same attention GRU decoder; the "
                "speed-up is against the tutorial's eager loop.",
                unit=("ms", 1e3),
                baseline="(a) eager Python loop",
                notes=(
                    "At batch 64 and a vocabulary of 8,000 the eager loop "
                    "is already mostly arithmetic (the `64 x 512 x 8000` "
                    "logits matmul and the GRU at each of 20 steps, about "
                    "16 GFLOP). Compiling the loop whole removes per-op "
                    "dispatch and the repeated key projection, and the "
                    "arithmetic left bounds the speed-up near 3-4x on 2 "
                    "cores. Where dispatch dominates (batch 8, vocabulary "
                    "1,000: `--batch-size 8 --vocabulary-size 1000`) the "
                    "compiled loop measured 8.7x faster than the eager one;"
                    " it also builds one `while` loop whatever the length, "
                    "and it exports.",
                    "Decoding under mixed_bfloat16 (`--bfloat16`) was "
                    "tried: tokens agree with float32 on 99-100% of "
                    "positions, but neither XLA's CPU backend nor graph "
                    "mode makes bfloat16 matmuls of this size faster on "
                    "this CPU, so the speed-up stays the same.",
                ),
            ),
            Section(
                "sampling_bench",
                "Milliseconds per batch of 64 sentences of 20 tokens for "
                "each way of drawing tokens inside the compiled loop: ours "
                "(per-row draws; the nucleus found without sorting the "
                "vocabulary) against the former implementation, and greedy "
                "search for scale.",
                unit=("ms", 1e3),
                baseline="greedy",
                notes=(
                    "Ours draws each token as `argmax(logits / T + g)` with"
                    " Gumbel noise hashed from (row seed, step, token id) "
                    "(`decoding.counter_random`), so a row's sample does "
                    "not depend on the rest of the batch, the padding, the "
                    "backend or the compiler: an export serves repeatable "
                    "samples under TF Serving's batching. The former draw "
                    "was `keras.random.categorical` over the whole "
                    "vocabulary.",
                    "The former top-p sorted all 8,000 logits of every row "
                    "at every step (`ops.top_k` with `k = V`). `top_p_mask`"
                    " finds the same nucleus without sorting, by bisection "
                    "over the probabilities' float32 bits (31 masked sums "
                    "per step), ties at the boundary included (tested "
                    "against a NumPy nucleus). Top-k stays cheap: a `top_k`"
                    " of 50 per row.",
                ),
            ),
            Section(
                "wavenet_generation_bench",
                "Milliseconds per generated sample of a WaveNet, streaming "
                "(cached states, one step per sample) against recomputing "
                "the whole receptive field for each sample; the fair "
                "speed-up is against the fastest naive mode.",
                notes=(
                    "One streamed sample costs one evaluation of each layer"
                    " (about 6 MFLOP) instead of the whole stack over the "
                    "receptive field (about 18 GFLOP). At batch 1 each step"
                    " is about 90 matrix-vector products over 12 MB of "
                    "weights, so it is bound by memory traffic, not "
                    "arithmetic: mixed_bfloat16 (half the bytes) helps "
                    "under XLA. Plain graph mode pays TensorFlow's per-op "
                    "cost for the ~500 ops of every step, and more under "
                    "mixed_bfloat16, where the weight casts are redone at "
                    "every step: compile generation with XLA. The naive "
                    "forward pass is often fastest in graph mode (oneDNN "
                    "convolutions), hence the comparison with its best "
                    "mode.",
                ),
            ),
        ),
    ),
    Topic(
        "training",
        "Training throughput",
        "Examples per second of a training epoch: our builders against the "
        "same model made of Keras built-ins, the JAX backend against "
        "TensorFlow, and `--strategy mirrored` on two logical CPU devices.",
        (
            Section(
                "translation_training_bench",
                "`build_rnn_translator` against the same model from Keras "
                "built-ins.",
                notes=(
                    "The two models have the same parameters. On this CPU "
                    "XLA is slower than graph mode for both (recurrent "
                    "layers, large matmuls), which is why Keras's "
                    '`jit_compile="auto"` picks graph mode here.',
                ),
            ),
            Section(
                "jax_training_throughput",
                "Each application's training step on JAX against TensorFlow.",
                notes=(
                    'TensorFlow\'s `jit_compile="auto"` is graph mode on a '
                    "CPU-only machine, while JAX's `fit` is always "
                    "`jax.jit`. At these small sizes each step is a few "
                    "milliseconds of arithmetic, so per-op dispatch weighs "
                    "and XLA's fusion of the whole step pays. Captioning "
                    "trains a CNN encoder from scratch, where TensorFlow's "
                    "oneDNN convolutions and batch norm are ahead; with the"
                    " encoder frozen JAX was faster there too.",
                    "JAX pays at warm-up: each distinct batch shape is one "
                    "compilation of several seconds. The translator "
                    "therefore pads each batch's lengths up to a multiple "
                    "of 8 on JAX "
                    "(`make_translation_dataset(length_multiple=8)`), which"
                    " took 8 batches from 7 shapes to 1.",
                ),
            ),
            Section(
                "mirrored_throughput",
                "Each application with `--strategy mirrored` against the "
                "default strategy.",
                notes=(
                    "The two logical devices share the same two cores, so "
                    "nothing is gained by splitting a step, and the "
                    "strategy adds its own cost (a distributed iterator per"
                    " epoch, per-replica steps, the gradient all-reduce); "
                    "part of it is per epoch, so longer epochs narrow the "
                    "gap. These rows are the strategy's overhead; the "
                    "speed-up needs one accelerator per replica.",
                ),
            ),
        ),
    ),
    Topic(
        "serving",
        "Exports and serving",
        "The latency of each application's exported SavedModel called in "
        "process, and `attention-zoo serve` under load and under faults.",
        (
            Section(
                "export_latency",
                "Milliseconds per call of each export, median and 95th "
                "percentile of interleaved calls; a row is application / "
                "`jit_compile` of the export / batch size.",
                unit=("ms", 1e3),
                notes=(
                    "XLA exports pay up front: each new input shape "
                    "compiles for seconds, where a graph export's first "
                    "call costs well under a second. So an XLA export needs"
                    " a warm-up over the shapes it will see; captioning and"
                    " EHR pad batches to bucketed sizes, and EHR pads event"
                    " and note lengths to multiples of 16, which keeps the "
                    "shapes few. On a CPU the export default "
                    "(`jit_compile=None`) is off, because TF Serving runs "
                    "XLA on CPU only with "
                    "`--xla_cpu_compilation_enabled=true`; a server that "
                    "loads the SavedModel in process can take XLA.",
                ),
            ),
            Section(
                "int8_export_bench",
                "A translator exported three times from the same weights: "
                "float32 and `--export-precision int8` (its large `Dense` "
                "layers as oneDNN int8 matmuls), both without XLA as on a "
                "CPU by default, and float32 with `--jit-compile on`: BLEU "
                "on the spa-eng test split, how many translations are the "
                "first export's, and milliseconds per greedy call of 1 and "
                "32 sentences, interleaved.",
                view=_int8_export_view,
                notes=(
                    "int8 pays off on the output projection (hidden size x "
                    "target vocabulary) only: quantizing the activations at"
                    " each call costs about as much as int8 saves on a 256 "
                    "x 768 GRU gate matmul at 32 rows, and more at one row."
                    " And a decoding step without XLA is bound by the cost "
                    "of running its many small ops one by one more than by "
                    "its matmuls: the same float32 weights XLA-compiled "
                    "(fused, in one program) decode 1.5-1.7 times as fast, "
                    "which is the faster CPU export today, served by TF "
                    "Serving started with `--xla_cpu_compilation_enabled="
                    "true`. XLA cannot compile the int8 op, so the two do "
                    "not combine.",
                    "This machine's CPU has AVX-512 VNNI but not AVX-512 "
                    "BF16 or AMX: bfloat16 matmuls run slower than float32 "
                    "here, so no bfloat16 export is offered.",
                ),
            ),
            Section(
                "translation_serving_cost",
                "Translators of different kinds side by side (the GRU of "
                "`translation-spa-eng`'s versions 1 and 2, the Transformer "
                "of its version 3): parameters and export size, then for "
                "each search BLEU on the spa-eng test split and the "
                "milliseconds per call and per sentence of each one's graph"
                " and XLA exports, called in alternation with 1 and 32 "
                "sentences a call: what a sentence costs to serve.",
                view=_translation_serving_cost_view,
            ),
            Section(
                "captioning_export_bench",
                "A captioner exported from the same weights: without XLA, "
                "as on a CPU by default; with `--jit-compile on`, where the"
                " beam search is XLA-compiled and the image encoder stays a"
                " graph function; and each of these with "
                "`--export-fold-batch-norms` (BN folded), where every "
                "convolution computes its batch normalization too. BLEU-4 "
                "and CIDEr-D on the model's test images, how many captions "
                "are the first export's, and milliseconds per call of 1 and"
                " 32 images (beam 3), interleaved.",
                view=_captioning_export_view,
                notes=(
                    "XLA's CPU convolutions are several times slower than "
                    "oneDNN's: compiled whole, encoder included, this "
                    "export ran at 0.36x (batch 1) and 0.12x (batch 32) of "
                    "the graph export. So the captioner's `DecodingAdapter`"
                    " sets `compile_encode = False`: the convolutions run "
                    "on oneDNN, and XLA fuses the beam search's many small "
                    "steps.",
                    "At 32 images a call the EfficientNet-Lite0 encoder is "
                    "most of the time, and XLA does not touch it. Keras "
                    "computes its batch normalizations as separate "
                    "element-wise passes over each feature map; folded into"
                    " the convolutions' kernels and biases, each layer is "
                    "one oneDNN convolution, its bias and ReLU6 fused in by"
                    " TensorFlow's graph optimizer: with `ONEDNN_VERBOSE=1`"
                    " the folded export's 49 convolutions per call run as "
                    "`brgconv_1x1` (32), `brdgmm_dw` (16) and "
                    "`brg_conv_fwd` (1), all with a bias and 33 with an "
                    "`eltwise_clip:0:6` post-op. The folded weights round "
                    "differently, so folding is an export option, not the "
                    "default.",
                ),
            ),
            Section(
                "ctranslate2_bench",
                "A Transformer translator trained by this project, served "
                "five ways from the same weights: our float32, int8 and "
                "float32 XLA exports (`serving_default` in process, text in "
                "and out) and CTranslate2 float32 and int8 (our tokens in "
                "and out), on "
                "the first 256 sources of the spa-eng test split: the "
                "translations that match ours, then milliseconds per greedy"
                " call and sentences per second with 1 and 2 threads.",
                view=_ctranslate2_view,
                notes=(
                    "The model is the recipe ablation's `dropout` variant "
                    "(Transformer 2 + 2 layers, d 256, 8,000-piece "
                    "vocabularies, 3 epochs; `outputs/translation_recipe`)."
                    " CTranslate2 float32 writes our translations exactly; "
                    "its int8 and ours differ in a few sentences, as "
                    "rounding moves near-ties.",
                    "Of our exports the XLA one is the fastest, and with 2 "
                    "threads it decodes a batch of 32 as fast as CTranslate2"
                    " float32. CTranslate2 int8 stays 2.5-5 times faster "
                    "than it: CTranslate2 runs every matmul in int8 (the "
                    "attention and feed-forward projections too, where our "
                    "int8 export quantizes only the output projection) in "
                    "fused C++ kernels with cached keys and values, while "
                    "a TensorFlow graph without XLA pays for each of a "
                    "step's many small ops, and XLA has no int8 kernels to "
                    "offer. On this 2-core machine a second thread slows "
                    "the graph exports and CTranslate2 (a step's matmuls "
                    "are too small to split) and speeds up the XLA export.",
                ),
            ),
            Section(
                "serving_load",
                "Requests per second and latency percentiles of the "
                "server, per protocol, batching and number of clients.",
                view=_serving_load_view,
                notes=(
                    "Throughput is the CPU the server gets divided by its "
                    "CPU per request (`server_cpu_ms_per_request`). "
                    "Batching cuts the model's share of it, but each "
                    "request also costs about a millisecond of Python "
                    "front-end work (grpcio or aiohttp, JSON or TensorProto "
                    "conversion, thread hand-offs) that batching does not "
                    "share and that runs under the GIL: for entailment and "
                    "EHR, whose models cost about 0.1 CPU ms per example in"
                    " calls of 32 (`batch32_cpu_ms_per_example` in "
                    "process), that front end is most of the cost, so "
                    "batching cannot multiply their requests/s on 2 cores "
                    "shared with the clients. `--apps echo` (a model that "
                    "costs nothing) measures the front end alone; a C++ "
                    "front end (TF Serving itself) or more cores would "
                    "serve more.",
                    "Requests reach the batcher one at a time through that "
                    "front end, so batches stay small; a longer "
                    "`batch_timeout_micros` makes bigger batches but not "
                    "more requests/s, and a timeout of 0 adds no latency to"
                    " a lone client. Captioning is bound by its encoder, "
                    "whose cost grows with the batch. Batching also cuts "
                    "the p99 latency under many clients: batches are served"
                    " in order, where without batching requests wait their "
                    "turn among concurrent signature calls.",
                ),
            ),
            Section(
                "serving_faults",
                "What clients saw while the server was killed, restarted "
                "or given a new version. `answered_after_s` is seconds from "
                "the fault to its effect: the restarted server's first "
                "answer after a kill, version 2's first answer after its "
                "rename into place, version 2's status reading END with its "
                "error for a corrupt one; `all_answered_after_s` lasts until "
                "every client had such an answer.",
                hidden=("wrong_examples", "version_2_error"),
                notes=(
                    "A kill's failures are connection errors or gRPC "
                    "`UNAVAILABLE`, never a wrong answer; the time to be "
                    "answered again is mostly the new server's start-up "
                    "(importing TensorFlow, loading). A new version written"
                    " atomically (`attention_zoo.export.atomic_directory`) "
                    "is picked up with no failed request, and a corrupt one"
                    " is reported in the version's status while version 1 "
                    "keeps answering. gRPC clients can take up to a second "
                    "longer than REST ones to be answered again after a "
                    "kill (the channels' reconnect backoff).",
                ),
            ),
        ),
    ),
)


# -- tables ------------------------------------------------------------------


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if value == 0 or abs(value) >= 100:
        return f"{value:,.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _is_ratio(key):
    last = key.rsplit(" ", 1)[-1]  # a spread column: "KEY SUBKEY"
    names = ("ratio", "ratios", "speedup")
    return key.startswith("speed-up") or key in names or last in names


def _cell(key, value, unit):
    if _is_ratio(key) and isinstance(value, (int, float)):
        return f"{value:.2f}x" if abs(value) < 100 else f"{value:,.0f}x"
    if _is_samples(value, unit):
        return _summary(value, unit)
    if isinstance(value, list) and _cell_like(value):
        return ", ".join(_cell(key, v, unit) for v in value)
    if isinstance(value, (dict, list)):
        return f"`{json.dumps(value)}`"
    return _number(value)


def _scaled(value, scale):
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return scale * value if number else value


def _summary(samples, unit):
    """Median / 95th percentile, as `export_latency` prints them
    (`np.percentile`, linear between ranks)."""
    name, scale = unit or ("", 1)
    median, p95 = np.percentile(samples, [50, 95])
    return f"{_number(scale * median)} / {_number(scale * p95)} {name}".strip()


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---" for _ in header) + " |")
    for row in rows:
        cells = [str(cell).replace("|", "\\|") for cell in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _is_records(value):
    return (
        isinstance(value, list)
        and value
        and all(isinstance(row, dict) for row in value)
    )


def _flattened(record):
    """`record` with each mapping of scalars spread into columns named
    "KEY SUBKEY"."""
    flat = {}
    for key, value in record.items():
        if isinstance(value, dict) and _cell_like(value):
            for sub, item in value.items():
                flat[f"{key} {sub}"] = item
        else:
            flat[key] = value
    return flat


def _records_table(records, unit):
    records = [_flattened(record) for record in records]
    header = []
    for record in records:
        header += [key for key in record if key not in header]
    rows = [
        [_cell(key, record.get(key, ""), unit) for key in header]
        for record in records
    ]
    return _table(header, rows)


def _is_scalar(value):
    return not isinstance(value, (dict, list))


def _is_samples(value, unit):
    return (
        unit is not None
        and isinstance(value, list)
        and bool(value)
        and all(isinstance(v, (int, float)) for v in value)
    )


def _cell_like(value):
    """A scalar, or a list or mapping of scalars (shown inline)."""
    if isinstance(value, dict):
        return all(_is_scalar(v) for v in value.values())
    if isinstance(value, list):
        return all(_is_scalar(v) for v in value)
    return True


def _flat(value):
    """A mapping whose values are table cells."""
    return isinstance(value, dict) and all(
        _cell_like(v) for v in value.values()
    )


def _without(value, hidden):
    """`value` without the keys `hidden`, at any depth."""
    if isinstance(value, dict):
        return {
            k: _without(v, hidden) for k, v in value.items() if k not in hidden
        }
    if isinstance(value, list):
        return [_without(v, hidden) for v in value]
    return value


def tables(result, unit=None, baseline=None):
    """Markdown for one benchmark's `result` (see the module's doc)."""
    if _is_records(result):
        return _records_table(result, unit)
    if isinstance(result, dict) and all(
        _is_scalar(v) or _is_samples(v, unit) for v in result.values()
    ):
        name, scale = unit or ("value", 1)
        samples = any(isinstance(v, list) for v in result.values())
        header = ["", f"median / p95 {name}" if samples else name]
        if baseline is not None:
            header.append(f"speed-up vs {baseline}")
        rows = []
        for key, value in result.items():
            row = [key, _cell("", _scaled(value, scale), unit)]
            if baseline is not None:
                row.append(_cell("ratio", result[baseline] / value, unit))
            rows.append(row)
        return _table(header, rows)
    if isinstance(result, dict) and all(_flat(v) for v in result.values()):
        # A mapping of flat mappings: a row each, named by its key.
        return _records_table(
            [{"": key, **value} for key, value in result.items()], unit
        )
    if isinstance(result, dict):
        return "\n\n".join(
            f"**{key}**\n\n{tables(value, unit)}"
            for key, value in result.items()
        )
    return f"`{json.dumps(result)}`"


# -- pages -------------------------------------------------------------------


def read_results(directory=RESULTS):
    """`{(backend, name): document}` of every result file there."""
    found = {}
    for backend in BACKENDS:
        folder = os.path.join(directory, backend)
        if not os.path.isdir(folder):
            continue
        for file in sorted(os.listdir(folder)):
            if file.endswith(".json"):
                with open(os.path.join(folder, file)) as handle:
                    found[(backend, file[: -len(".json")])] = json.load(handle)
    return found


def machine_line(document):
    """Where a result was measured: "DATE, CPU (N cores), versions"."""
    machine = document.get("machine", {})
    versions = ", ".join(
        f"{package} {machine[package]}"
        for package in ("tensorflow", "keras", "jax")
        if package in machine
    )
    return (
        f"{machine.get('date', 'date unknown')}, "
        f"{machine.get('cpu', 'CPU unknown')} "
        f"({machine.get('cores', '?')} cores), {versions}"
    )


def _backends(section, results):
    """The backends `results` hold a result of `section` for."""
    return [b for b in BACKENDS if (b, section.name) in results]


def _viewed(section, document):
    result = document["result"]
    return result if section.view is None else section.view(result)


def page(topic, results):
    """The Markdown of `topic`'s page from `results` (`read_results`)."""
    parts = [
        f"# {topic.title}",
        "<!-- Made by `python -m benchmarks.pages` from "
        "docs/benchmarks/results/: edit the results or the script, not "
        "this page. -->",
        topic.intro,
    ]
    for section in topic.sections:
        runs = _backends(section, results)
        parts.append(f"## `{section.name}`")
        parts.append(section.meaning)
        if not runs:
            parts.append(
                "No result file yet: run the command of the benchmark's "
                f"docstring (`benchmarks/{section.name}.py`) with "
                "`--out docs/benchmarks/results/BACKEND`."
            )
        for backend in runs:
            document = results[(backend, section.name)]
            command = f"KERAS_BACKEND={backend} {document['command']}"
            parts.append(f"### {backend}")
            parts.append(f"```bash\n{command}\n```")
            parts.append(f"Measured {machine_line(document)}.")
            parts.append(
                tables(
                    _without(_viewed(section, document), section.hidden),
                    section.unit,
                    section.baseline,
                )
            )
        if section.notes:
            parts.append("### Why")
            parts.extend(section.notes)
    return "\n\n".join(parts) + "\n"


def index(results):
    """The pages' index: each topic with its benchmarks."""
    lines = [
        "# Benchmarks",
        "<!-- Made by `python -m benchmarks.pages`. -->",
        "Speed figures of this library, each measured side by side with "
        "what it is compared to, in one run: candidates are timed in "
        "alternation (A, B, A, B, ...) and each figure is a median "
        "(`benchmarks/harness.py`). The machines are noisy: trust ratios "
        "to about 10%, not absolute times. Each page gives the command "
        "that reproduces a table and the machine it was measured on; "
        "earlier figures are in git's history of these files.",
    ]
    rows = []
    for topic in TOPICS:
        for section in topic.sections:
            rows.append(
                [
                    f"[{topic.title}]({topic.slug}.md)",
                    f"`{section.name}`",
                    ", ".join(_backends(section, results)) or "not yet run",
                ]
            )
    lines.append(_table(["page", "benchmark", "measured on"], rows))
    return "\n\n".join(lines) + "\n"


def make_pages(results):
    """`{file name: Markdown}` of every page."""
    pages = {"index.md": index(results)}
    for topic in TOPICS:
        pages[f"{topic.slug}.md"] = page(topic, results)
    return pages


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.pages", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--out", default=PAGES)
    args = parser.parse_args(argv)
    for name, text in make_pages(read_results(args.results)).items():
        with atomic_write(os.path.join(args.out, name)) as file:
            file.write(text)
        print(os.path.join(args.out, name))


if __name__ == "__main__":
    main()
