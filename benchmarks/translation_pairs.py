"""The sentence pairs the translation benchmarks translate.

`add_flags(parser, default)` adds `--pairs N` (how many; 0: all) and
`--synthetic`; `chosen(args)` gives the first `--pairs` of the spa-eng test
split (`experiments.translation_recipe.load_pairs`, the shipped models'
test sample) or, with `--synthetic`, of generated pairs (for a model
trained on them), as `(source, reference)` pairs. `quality_rows` scores
exports' translations of them, `speed_rows` times the exports.
"""

from attention_zoo_apps.translation.evaluate import corpus_scores
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from benchmarks import harness
from experiments import translation_recipe

# Generated pairs made for `--synthetic --pairs 0`.
SYNTHETIC_ALL = 64


def add_flags(parser, default):
    """`--pairs` (default `default`) and `--synthetic` on `parser`."""
    parser.add_argument(
        "--pairs",
        type=int,
        default=default,
        help="how many test pairs (0: all)",
    )
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="generated pairs (for a model trained on them)",
    )


def chosen(args):
    """The `(source, reference)` pairs `args.pairs` and `args.synthetic`
    ask for."""
    if args.synthetic:
        count = args.pairs or SYNTHETIC_ALL
        return make_synthetic_pairs(count, seed=1).pairs[:count]
    pairs = translation_recipe.load_pairs("spa-eng")[2]
    return pairs[: args.pairs] if args.pairs else pairs


def quality_rows(serves, pairs):
    """Each export's translations of the sources of `pairs`, 32 a call,
    scored against their references: rows `{export, bleu, chrf, same
    translations, bleu_signature}` (same: how many are the first
    export's), each printed. `serves` maps export names to
    `serving_default` signatures."""
    sources = [source for source, _ in pairs]
    references = [reference for _, reference in pairs]
    rows, first = [], None
    for name, serve in serves.items():
        texts = harness.serve_texts(serve, "text", sources, "translation")
        first = first or texts
        scores = corpus_scores(texts, references)
        same = sum(a == b for a, b in zip(first, texts))
        rows.append(
            {
                "export": name,
                "bleu": scores["bleu"],
                "chrf": scores["chrf"],
                "same translations": same,
                "bleu_signature": scores["bleu_signature"],
            }
        )
        print(
            f"{name}: BLEU {scores['bleu']:.2f}, chrF {scores['chrf']:.2f} "
            f"on {len(pairs)} test pairs, {same} translations the first "
            "export's",
            flush=True,
        )
    return rows


def speed_rows(serves, sources, batches, repeats):
    """`harness.export_speed_rows` of translation exports: each call
    `batch` of `sources` (cycling through 64 calls' sentences)."""
    import tensorflow as tf  # lazy: the benchmarks set the backend first

    return harness.export_speed_rows(
        serves,
        lambda batch: [
            {"text": tf.constant(sources[start : start + batch])}
            for start in range(0, min(len(sources), 64 * batch), batch)
        ],
        "translation",
        batches,
        repeats,
    )
