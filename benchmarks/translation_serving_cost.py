"""Translators side by side: quality, size and serving cost per sentence.

Run from the repository root (TensorFlow backend):

    python -m benchmarks.translation_serving_cost \\
        --models translation-spa-eng outputs/translation_recipe/MODEL \\
        [--beam-size 1 [4 ...]] [--pairs 0] [--repeats 20] [--out DIR]

Each of `--models` is a shipped model's name, an export folder (a
version folder names its version: `saved_models/translation-spa-eng/2`),
or a folder `Translator.save` wrote (`experiments.translation_recipe`
saves each variant it trains). For each search (`--beam-size`: 1 is
greedy, more is beam search with `--length-penalty`), each model is
exported twice, the same weights with that search: float32 in graph
mode, what `attention-zoo train --export` writes on a CPU (TF Serving's
CPU default), and XLA-compiled (`--jit-compile on`, served with
`--xla_cpu_compilation_enabled=true`). Then:

1. Size: each model's parameters and its graph export's MB on disk
   (10^6 bytes, as the model cards count).
2. Quality, per search: each export translates the sources of the
   spa-eng test split (the shipped models' test sample; the first
   `--pairs`, 0: all) in batches of 32: sacreBLEU's cased BLEU and chrF,
   and how many translations are the same as the model's graph export's.
3. Speed, per search: every export of that search's `serving_default`
   called in alternation (`harness.export_speed_rows`), `--repeats`
   rounds at batch 1 and 32 (cycling through 64 calls' sentences, every
   one called once before): the median ms per call, per sentence, and the
   speed-up over the first export (the first model's graph export).

With `--out DIR` it writes `DIR/translation_serving_cost.json` and
`.txt`.
"""

import os
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (registers the tokenizer ops)

from attention_zoo.decoding.searches import BeamSearch  # noqa: E402
from attention_zoo.decoding.searches import Greedy  # noqa: E402
from attention_zoo_apps.common import run_files  # noqa: E402
from attention_zoo_apps.common import zoo  # noqa: E402
from attention_zoo_apps.translation.translator import Translator  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from benchmarks import translation_pairs  # noqa: E402

# Export kind -> its `export` options.
EXPORTS = {"graph": dict(jit_compile=False), "XLA": dict(jit_compile=True)}
BATCHES = (1, 32)


def _parser():
    parser = harness.parser(__doc__, repeats=20)
    parser.add_argument(
        "--models",
        nargs="+",
        required=True,
        help="shipped model names, export folders or saved translators",
    )
    parser.add_argument(
        "--beam-size",
        type=int,
        nargs="+",
        default=[1],
        help="the searches: 1 is greedy, N > 1 beam search of N",
    )
    parser.add_argument("--length-penalty", type=float, default=0.6)
    translation_pairs.add_flags(parser, default=0)
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), measure, argv)


def load_translator(model):
    """The `Translator` of a shipped name, an export folder or a folder
    `Translator.save` wrote (it holds the weights file)."""
    path = zoo.resolve(model)
    if os.path.isfile(os.path.join(path, run_files.WEIGHTS_FILE)):
        return Translator.load(path)
    return Translator.from_export(path)


def search_of(beam_size, length_penalty):
    """`(search, its description)` for a `--beam-size` value."""
    if beam_size > 1:
        return (
            BeamSearch(beam_size, length_penalty),
            f"beam {beam_size}, lp {length_penalty}",
        )
    return Greedy(), "greedy"


def measure(args):
    pairs = translation_pairs.chosen(args)
    sources = [source for source, _ in pairs]
    searches = [search_of(size, args.length_penalty) for size in args.beam_size]
    result = {
        "sentences": len(pairs),
        "models": [],
        "searches": [
            {"search": described, "quality": []} for _, described in searches
        ],
    }
    serves = [{} for _ in searches]
    with tempfile.TemporaryDirectory() as folder:
        for index, model in enumerate(args.models):
            translator = load_translator(model)
            label = _label(model, translator)
            for number, (search, _) in enumerate(searches):
                mine = {}
                for kind, options in EXPORTS.items():
                    path = os.path.join(folder, f"{index}-{number}-{kind}", "1")
                    translator.export(path, search=search, **options)
                    if kind == "graph" and number == 0:
                        result["models"].append(_size(label, translator, path))
                    mine[f"{label}, {kind}"] = tf.saved_model.load(
                        path
                    ).signatures["serving_default"]
                searched = result["searches"][number]
                searched["quality"] += translation_pairs.quality_rows(
                    mine, pairs
                )
                serves[number].update(mine)
        for searched, serving in zip(result["searches"], serves):
            rows = translation_pairs.speed_rows(
                serving, sources, BATCHES, args.repeats
            )
            for row in rows:
                row["ms per sentence"] = round(
                    row["ms per call"] / row["batch"], 2
                )
            searched["rows"] = rows
            print(f"{searched['search']} search:")
            print(pages.tables(rows))
    return result


def _label(model, translator):
    """`model` as given (a name, or a folder's last part) and its kind."""
    name = os.path.basename(os.path.normpath(model))
    if name.isdigit():  # a version folder: its model's folder, and it
        parent = os.path.basename(os.path.dirname(os.path.normpath(model)))
        name = f"{parent}/{name}"
    return f"{name} ({translator.config.model})"


def _size(label, translator, path):
    return {
        "model": label,
        "parameters": translator.model.count_params(),
        "export MB": round(zoo.size_mb(path), 1),
    }


if __name__ == "__main__":
    main()
