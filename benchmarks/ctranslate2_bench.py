"""Our Transformer translator's export against CTranslate2 on its weights.

Run from the repository root (TensorFlow backend; CTranslate2 comes with
the `benchmarks` extra) on a Transformer `Translator` saved with `save`:

    python -m benchmarks.ctranslate2_bench BUNDLE_DIR [--pairs 256] \\
        [--repeats 20] [--out DIR]

The bundle is exported three times (`OURS`, greedy): as `attention-zoo
train translation --export` writes it on a CPU (float32, no XLA), with
`--export-precision int8` (its large `Dense` layers as oneDNN int8
matmuls; left out, with a printed line, on a CPU whose TensorFlow cannot
run them: `int8.int8_available`) and with `--jit-compile on` (float32,
XLA); and converted to CTranslate2 twice
(`benchmarks.ctranslate2_convert`: float32 and int8 weights). The
sentences are the first `--pairs` sources of the Tatoeba spa-eng test
split (`benchmarks.translation_pairs`; with `--synthetic`, generated
pairs, for a bundle trained on them).

First the outputs: each candidate's greedy translations (CTranslate2's
written back to text by our target tokenizer) against the first
export's, and the count of sentences that are the same (no speed is
compared before it is printed). Then the speed, in one child process per
thread count (1 and 2, TensorFlow and CTranslate2 given the same number
of intra-op threads), every candidate called once with every input (XLA
compiles once per shape) and then timed in alternation
(`harness.interleaved_samples`) at batch 1 (one sentence a call, cycling)
and batch 32: median milliseconds per call and sentences per second.
Ours is the export's `serving_default` called in process: text in, text
out, tokenizing and detokenizing in its graph.
CTranslate2 is given our tokens (its users tokenize beside it) and gives
tokens: its figures leave out the tokenizing ours include, so they
favour it slightly.

With `--out DIR` it writes `DIR/ctranslate2_bench.json` and `.txt`.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import ctranslate2  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (registers the tokenizer ops)

from attention_zoo.export import int8  # noqa: E402
from attention_zoo_apps.common import token_ids  # noqa: E402
from attention_zoo_apps.translation.translator import Translator  # noqa: E402
from benchmarks import ctranslate2_compare  # noqa: E402
from benchmarks import ctranslate2_convert  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import translation_pairs  # noqa: E402

THREADS = (1, 2)
BATCHES = (1, 32)
# Our exports: candidate -> `export` options.
OURS = {
    "ours, float32 export": dict(jit_compile=False),
    "ours, int8 export": dict(jit_compile=False, precision="int8"),
    "ours, float32 XLA export": dict(jit_compile=True),
}
# CTranslate2's: candidate -> the converted weights' type.
THEIRS = {"CTranslate2 float32": "float32", "CTranslate2 int8": "int8"}
CANDIDATES = (*OURS, *THEIRS)


def ours():
    """`OURS` less the int8 export where this CPU's TensorFlow cannot run
    oneDNN's int8 matmul (`int8.int8_available`), which it then says."""
    if int8.int8_available():
        return OURS
    left_out = [name for name, o in OURS.items() if o.get("precision")]
    print(
        f"{', '.join(left_out)}: left out (TensorFlow cannot run oneDNN's "
        "int8 matmul on this CPU)",
        flush=True,
    )
    return {name: o for name, o in OURS.items() if name not in left_out}


def _parser():
    parser = harness.parser(__doc__, repeats=20)
    parser.add_argument("bundle", help="a saved Transformer Translator")
    translation_pairs.add_flags(parser, default=256)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), measure, argv)


def _sentences(args):
    return [source for source, _ in translation_pairs.chosen(args)]


def _prepare(args, folder):
    """Every candidate's export or CTranslate2 model of `args.bundle` in
    `folder`: candidate -> path."""
    translator = Translator.load(args.bundle)
    paths = {}
    for number, (name, options) in enumerate(ours().items()):
        path = os.path.join(folder, f"export-{number}", "1")
        paths[name] = translator.export(path, **options)
    for name, kind in THEIRS.items():
        paths[name] = ctranslate2_convert.convert(
            translator, os.path.join(folder, f"ct2-{kind}"), kind
        )
    return translator, paths


def _their_texts(translator, model, sentences):
    """CTranslate2's greedy translations of `sentences`, as text."""
    ids = translator.source_ids(sentences)
    found, _ = ctranslate2_compare.translate_ids(model, translator, ids)
    width = max([len(row) for row in found] + [1])
    padded = np.zeros((len(found), width), "int32")
    for row, tokens in enumerate(found):
        padded[row, : len(tokens)] = tokens
    texts = translator.target_tokenizer.detokenize(padded).numpy()
    return [text.decode("utf-8") for text in texts]


def measure(args):
    if args.child:
        return _child(json.loads(args.child))
    sentences = _sentences(args)
    with tempfile.TemporaryDirectory() as folder:
        translator, paths = _prepare(args, folder)
        candidates = list(paths)  # ours (those this CPU runs), theirs
        texts = {
            name: _export_texts(paths[name], sentences)
            for name in candidates
            if name in OURS
        }
        for name in THEIRS:
            model = ctranslate2.Translator(paths[name], device="cpu")
            texts[name] = _their_texts(translator, model, sentences)
        first = texts[candidates[0]]
        same = {}
        for name in candidates[1:]:
            same[name] = sum(a == b for a, b in zip(first, texts[name]))
            print(
                f"{name}: {same[name]} of {len(sentences)} translations the "
                f"same as {candidates[0]}'s",
                flush=True,
            )
        rows = []
        for threads in THREADS:
            request = dict(vars(args), child=None, threads=threads, paths=paths)
            rows += _run_child(request)
    print(_table(rows))
    return {"sentences": len(sentences), "same": same, "rows": rows}


def _export_texts(path, sentences):
    """The export's translations of `sentences`, one call."""
    serve = tf.saved_model.load(path).signatures["serving_default"]
    texts = serve(text=tf.constant(sentences))["translation"].numpy()
    return [text.decode("utf-8") for text in texts.tolist()]


def _run_child(request):
    """One child's rows: its thread count set before TensorFlow starts."""
    environment = dict(
        os.environ,
        TF_NUM_INTRAOP_THREADS=str(request["threads"]),
        TF_NUM_INTEROP_THREADS="1",
    )
    command = [sys.executable, "-m", "benchmarks.ctranslate2_bench"]
    command += [request["bundle"], "--child", json.dumps(request)]
    done = subprocess.run(
        command,
        env=environment,
        cwd=harness.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(
            f"the child of {request['threads']} threads failed:\n"
            f"{done.stderr[-3000:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(request):
    """Times every candidate at each batch size; prints the rows as one
    JSON line (the parent reads the last line)."""
    args = argparse.Namespace(**request)
    sentences = _sentences(args)
    paths, threads = request["paths"], request["threads"]
    translator = Translator.load(args.bundle)
    serves = {
        name: tf.saved_model.load(paths[name]).signatures["serving_default"]
        for name in paths
        if name in OURS
    }
    models = {
        name: ctranslate2.Translator(
            paths[name], device="cpu", intra_threads=threads, inter_threads=1
        )
        for name in THEIRS
    }
    rows = []
    for batch in BATCHES:
        calls = [
            sentences[start : start + batch]
            for start in range(0, len(sentences) - batch + 1, batch)
        ] or [sentences[:batch]]
        tokens = [_tokens(translator, call) for call in calls]
        search = ctranslate2_compare.search_options(translator)

        runners = {
            name: harness.cycling(
                lambda call, serve=serve: serve(text=tf.constant(call))[
                    "translation"
                ].numpy(),
                calls,
            )
            for name, serve in serves.items()
        }
        for name, model in models.items():
            runners[name] = harness.cycling(
                lambda call, model=model: model.translate_batch(call, **search),
                tokens,
            )
        samples = harness.interleaved_samples(
            runners, args.repeats, warmup=len(calls)
        )
        for name, seconds in samples.items():
            median = statistics.median(seconds)
            rows.append(
                {
                    "threads": threads,
                    "batch": batch,
                    "candidate": name,
                    "ms per call": round(1e3 * median, 2),
                    "sentences per s": round(batch / median, 1),
                }
            )
    print(json.dumps(rows))
    return rows


def _tokens(translator, sentences):
    """`sentences` as CTranslate2 takes them; a sentence without tokens as
    `[UNK]` (every call translates every row)."""
    tokens = ctranslate2_compare.source_tokens(
        translator, translator.source_ids(sentences)
    )
    return [row or [token_ids.UNK] for row in tokens]


def _table(rows):
    lines = [
        "| threads | batch | candidate | ms per call | sentences/s | vs ours |",
        "| ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    ours = {
        (r["threads"], r["batch"]): r["ms per call"]
        for r in rows
        if r["candidate"] == CANDIDATES[0]
    }
    for r in rows:
        ratio = ours[(r["threads"], r["batch"])] / r["ms per call"]
        lines.append(
            f"| {r['threads']} | {r['batch']} | {r['candidate']} | "
            f"{r['ms per call']:.2f} | {r['sentences per s']:.1f} | "
            f"{ratio:.2f}x |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
