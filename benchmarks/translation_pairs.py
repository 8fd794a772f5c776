"""The sentence pairs the translation benchmarks translate.

`add_flags(parser, default)` adds `--pairs N` (how many; 0: all) and
`--synthetic`; `chosen(args)` gives the first `--pairs` of the spa-eng test
split (`experiments.translation_recipe.load_pairs`, the shipped models'
test sample) or, with `--synthetic`, of generated pairs (for a model
trained on them), as `(source, reference)` pairs.
"""

from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
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
