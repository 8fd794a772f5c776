"""A translator's int8 export against its float32 exports, same weights.

Run from the repository root (TensorFlow backend):

    python -m benchmarks.int8_export_bench [--model translation-spa-eng] \\
        [--pairs 0] [--repeats 30] [--out DIR]

`--model` is a shipped model's name or an export folder of a Tatoeba
spa-eng translator (with `--synthetic`, of one trained on generated pairs).
It is exported three times (`EXPORTS`): the float32 export `attention-zoo
train --export` writes on a CPU (`jit_compile` off, TF Serving's CPU
default), `precision="int8"` (`attention_zoo.export.int8`: its large
`Dense` layers as oneDNN int8 matmuls; not XLA-compiled either), and the
float32 export XLA-compiled (`--jit-compile on`, which TF Serving runs on
a CPU when started with `--xla_cpu_compilation_enabled=true`). Then, in
this order:

1. Quality: each export translates the sources of the test split
   (`experiments.translation_recipe.load_pairs`, the shipped models'
   split; the first `--pairs`, 0: all) in batches of 32: sacreBLEU's cased
   BLEU and chrF, and how many of its translations are the first
   export's.
2. Kernels: a child process with `ONEDNN_VERBOSE=1` runs one batch
   through the int8 export and lists the oneDNN implementations its
   matmuls ran on (`brgemm:avx512_core_vnni`: the VNNI int8 kernels; none
   listed: the op did not reach oneDNN).
3. Speed: the exports' `serving_default` called in process, in
   alternation (`harness.interleaved_samples`), `--repeats` rounds at
   batch 1 and 32 (cycling through 64 calls' sentences, every one called
   once before): median ms per call and the speed-up over the first
   export.

With `--out DIR` it writes `DIR/int8_export_bench.json` and `.txt`. On a
CPU whose TensorFlow cannot run the int8 matmul (no AVX-512 VNNI or AMX;
`int8.int8_available`) it stops first, in one line.
"""

import argparse
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (registers the tokenizer ops)

from attention_zoo.export import int8  # noqa: E402
from attention_zoo_apps.common import zoo  # noqa: E402
from attention_zoo_apps.translation.translator import Translator  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from benchmarks import translation_pairs  # noqa: E402

# Export name -> its `export` options.
EXPORTS = {
    "float32": dict(jit_compile=False),
    "int8": dict(jit_compile=False, precision="int8"),
    "float32 XLA": dict(jit_compile=True),
}
BATCHES = (1, 32)


def _parser():
    parser = harness.parser(__doc__, repeats=30)
    parser.add_argument("--model", default="translation-spa-eng")
    translation_pairs.add_flags(parser, default=0)
    parser.add_argument("--kernels-of", help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    """Exits with one line where this CPU cannot run the int8 export (no
    AVX-512 VNNI or AMX: `int8.check_int8_available`)."""
    try:
        return harness.run(__file__, _parser(), measure, argv)
    except int8.Int8Unavailable as error:
        sys.exit(f"int8_export_bench: {error}")


def measure(args):
    if args.kernels_of:
        return _print_kernels(args.kernels_of)
    int8.check_int8_available()  # before any export is made
    pairs = translation_pairs.chosen(args)
    sources = [source for source, _ in pairs]
    translator = Translator.from_export(zoo.resolve(args.model))
    with tempfile.TemporaryDirectory() as folder:
        serves, result = {}, {"model": args.model, "sentences": len(pairs)}
        for name, options in EXPORTS.items():
            path = os.path.join(folder, name.replace(" ", "-"), "1")
            serves[name] = tf.saved_model.load(
                translator.export(path, **options)
            ).signatures["serving_default"]
        result["quality"] = translation_pairs.quality_rows(serves, pairs)
        result["kernels"] = _kernels(args, os.path.join(folder, "int8", "1"))
        print(f"oneDNN int8 matmul kernels: {', '.join(result['kernels'])}")
        result["rows"] = translation_pairs.speed_rows(
            serves, sources, BATCHES, args.repeats
        )
    print(pages.tables(result["rows"]))
    return result


def _kernels(args, export):
    """The oneDNN implementations the int8 export's matmuls ran on, read
    from a child process's `ONEDNN_VERBOSE=1` log."""
    command = [sys.executable, "-m", "benchmarks.int8_export_bench"]
    command += ["--kernels-of", export]
    done = subprocess.run(
        command,
        env=dict(os.environ, ONEDNN_VERBOSE="1"),
        cwd=harness.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"the ONEDNN_VERBOSE child failed:\n{done.stderr}")
    return onednn_matmul_kernels(done.stdout)


def onednn_matmul_kernels(log):
    """The distinct implementations of the int8 matmuls in a
    `ONEDNN_VERBOSE` log: the field after the primitive of the lines
    `onednn_verbose,v1,primitive,exec,cpu,PRIMITIVE,IMPLEMENTATION,...`
    whose primitive is `inner_product` or `matmul` and whose weights are
    `s8`."""
    found = []
    for line in log.splitlines():
        fields = line.split(",")
        if fields[3:5] != ["exec", "cpu"] or len(fields) < 7:
            continue
        if fields[5] in ("inner_product", "matmul") and "wei:s8" in line:
            if fields[6] not in found:
                found.append(fields[6])
    return found


def _print_kernels(export):
    serve = tf.saved_model.load(export).signatures["serving_default"]
    serve(text=tf.constant(["Tengo tres gatos."] * 32))
    return None


if __name__ == "__main__":
    main()
