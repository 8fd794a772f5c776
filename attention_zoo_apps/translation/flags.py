"""The flags of `attention-zoo train translation`: its `parser()`.

Imports no TensorFlow, so that the command checks every flag value, and
answers `--help`, before the training code is imported
(`train_flags.precheck`).
"""

import argparse

from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.common.flag_checks import FlagParser
from attention_zoo_apps.translation.options import ATTENTIONS
from attention_zoo_apps.translation.options import MODELS
from attention_zoo_apps.translation.options import PLACEHOLDER_RULES
from attention_zoo_apps.translation.options import SCHEDULES

# Config field -> the flags (dests) other than its own name that set it
# (`--init-from` refuses one given with another value than the model's).
FIELD_FLAGS = {
    "source_vocabulary_size": ("vocabulary_size",),
    "target_vocabulary_size": ("vocabulary_size",),
}
# Config fields that `--init-from` takes from the flags besides
# `train_flags.FINE_TUNING_FIELDS`: how to train, not the model.
FINE_TUNING_FIELDS = (
    "dropout",
    "attention_dropout",
    "learning_rate_schedule",
    "warmup_steps",
    "label_smoothing",
    "average_checkpoints",
)


def train_parser():
    parser = FlagParser(
        prog="attention-zoo train translation",
        description="Train a translator, evaluate it and export it.",
    )
    parser.add_argument(
        "--data",
        help="pairs file: .tsv/.txt(.gz) or .jsonl;"
        " default: the generated synthetic language pair",
    )
    parser.add_argument(
        "--source-column",
        type=int,
        default=0,
        metavar="N",
        help="0-based column of a .tsv/.txt --data file holding the "
        "sentences to translate from (default: %(default)s). The Tatoeba "
        "files (spa.txt.gz) hold english<TAB>spanish: the defaults learn "
        "English -> Spanish, --source-column 1 --target-column 0 Spanish "
        "-> English (as translation-spa-eng). With --init-from, the source "
        "column must read like the model's source language (checked on "
        "200 pairs before training)",
    )
    parser.add_argument(
        "--target-column",
        type=int,
        default=1,
        metavar="N",
        help="0-based column of the translations to learn "
        "(default: %(default)s)",
    )
    parser.add_argument("--max-pairs", type=int, default=None)
    parser.add_argument("--synthetic-pairs", type=int, default=6000)
    parser.add_argument("--model", choices=MODELS, default="rnn")
    parser.add_argument(
        "--attention",
        default="additive",
        choices=[name or "none" for name in ATTENTIONS],
        help="RNN attention (monotonic: Raffel et al.; local: Luong's "
        "local-p, window 8); none: the no-attention baseline",
    )
    parser.add_argument("--cell", choices=["gru", "lstm"], default="gru")
    parser.add_argument(
        "--lowercase",
        action="store_true",
        help="lower-case the text (vocabularies and output); default: keep "
        "the case, as cased BLEU scores it",
    )
    train_flags.add_training_arguments(parser)
    parser.add_argument(
        "--learning-rate-schedule",
        choices=SCHEDULES,
        help="constant: --learning-rate throughout (the RNN's default); "
        "inverse_sqrt: a linear warm-up to --learning-rate over "
        "--warmup-steps updates, then decay with the inverse square root "
        "of the updates (the Transformer's schedule and default)",
    )
    parser.add_argument(
        "--warmup-steps",
        type=int,
        metavar="N",
        help="the warm-up of --learning-rate-schedule inverse_sqrt, in "
        "updates (default: one epoch's, at most 1000)",
    )
    parser.add_argument(
        "--average-checkpoints",
        type=int,
        metavar="N",
        help="evaluate and export the mean of the last N epochs' weights "
        "(kept in --run-dir/epochs; default: 2 for the Transformer "
        "without --patience, else 1, the last epoch's)",
    )
    parser.add_argument(
        "--label-smoothing",
        type=float,
        metavar="E",
        help="move E of each target token's probability to the uniform "
        "distribution in the loss (default: 0.1 for the Transformer, 0 "
        "for the RNN)",
    )
    parser.add_argument(
        "--dropout",
        type=float,
        help="dropout rate (default 0.1): the RNN's before its logits "
        "layer; the Transformer's on its embeddings and on each "
        "sub-layer's output before the residual sum",
    )
    parser.add_argument(
        "--attention-dropout",
        type=float,
        metavar="R",
        help="the Transformer's dropout on its attention weights (default 0)",
    )
    parser.add_argument(
        "--model-dim",
        type=int,
        metavar="D",
        help="the Transformer's width, a multiple of --num-heads (default "
        "256; 64 on the generated pair)",
    )
    parser.add_argument(
        "--num-heads",
        type=int,
        metavar="H",
        help="the Transformer's attention heads (default 4; 2 on the "
        "generated pair)",
    )
    parser.add_argument(
        "--feed-forward-dim",
        type=int,
        metavar="F",
        help="the width of the Transformer's feed-forward layers (default "
        "1024; 128 on the generated pair)",
    )
    parser.add_argument(
        "--num-layers",
        type=int,
        metavar="N",
        help="the Transformer's encoder blocks, and its decoder blocks "
        "unless --decoder-layers says otherwise (default 2)",
    )
    parser.add_argument(
        "--decoder-layers",
        type=int,
        metavar="N",
        help="the Transformer's decoder blocks (default: as many as the "
        "encoder's, 2): a shallow decoder makes each decoding step cheaper",
    )
    parser.add_argument(
        "--tie-embeddings",
        action="store_true",
        default=None,
        help="the Transformer's logits from its target embedding matrix "
        "(no separate output layer)",
    )
    parser.add_argument(
        "--joint-vocabulary",
        action="store_true",
        default=None,
        help="learn one WordPiece vocabulary (of --vocabulary-size) from "
        "both sides' text and use it for both",
    )
    parser.add_argument(
        "--placeholders",
        type=placeholder_rules,
        metavar="RULES",
        help="copy these source words into the translation through "
        "placeholder tokens, comma-separated: numbers (words of digits), "
        "names (capitalized words inside a sentence that the source "
        "vocabulary spells in 2+ pieces), unknown (words it cannot "
        "spell: emoji, other scripts); none: copy nothing (default: all "
        "three for the Transformer, none for the RNN)",
    )
    parser.add_argument("--units", type=int)
    parser.add_argument("--embedding-dim", type=int)
    parser.add_argument("--vocabulary-size", type=int)
    parser.add_argument("--max-length", type=int)
    parser.add_argument(
        "--beam-size",
        type=int,
        default=1,
        help="beam size for the test-split evaluation (default 1: greedy "
        "search)",
    )
    parser.add_argument(
        "--choose-search",
        action="store_true",
        help="pick the beam size and length penalty on the validation "
        "split (greedy, or beam 4 with length penalty 0, 0.6 or 1: the "
        "best cased BLEU on up to 1,000 pairs); the test split is decoded "
        "with it and --export serves it, the choice in its metadata",
    )
    parser.add_argument("--validation-fraction", type=float, default=0.05)
    parser.add_argument("--test-fraction", type=float, default=0.05)
    train_flags.add_run_arguments(
        parser, "translation", "checkpoints, vocabularies, config, pictures"
    )
    return parser


def placeholder_rules(text):
    """`--placeholders`: `"numbers,names"` -> `("numbers", "names")`,
    `"none"` -> `()`."""
    if text.strip() == "none":
        return ()
    rules = tuple(rule.strip() for rule in text.split(","))
    wrong = [rule for rule in rules if rule not in PLACEHOLDER_RULES]
    if wrong or len(set(rules)) != len(rules):
        raise argparse.ArgumentTypeError(
            f"must be none or distinct rules of {','.join(PLACEHOLDER_RULES)} "
            f"separated by commas; got {text!r}"
        )
    return rules


INFER_PROG = "attention-zoo translate"


def infer_parser():
    """The parser of `attention-zoo translate` (`infer.py`)."""
    prog = INFER_PROG
    parser = infer_flags.export_parser(
        prog,
        "Translate texts with a translation export (`attention-zoo train "
        "translation --export DIR`). One line per text: text<TAB>translation.",
        [
            f'{prog} translation-spa-eng "¿Dónde está la biblioteca?"',
            f'{prog} saved_models/translation "el perro come pan" "hola"',
        ],
    )
    parser.add_argument("texts", nargs="+", help="texts to translate")
    infer_flags.add_seed_argument(parser, "text")
    return parser
