"""The flags of `attention-zoo train entailment`: its `parser()`.

Imports no TensorFlow, so that the command checks every flag value, and
answers `--help`, before the training code is imported
(`train_flags.precheck`).
"""

from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.common.flag_checks import FlagParser
from attention_zoo_apps.entailment import data

# Config field -> the flags (dests) other than its own name that set it
# (`--init-from` refuses one given with another value than the model's).
FIELD_FLAGS = {
    "attention": ("no_attention",),
    "trainable_embeddings": ("fixed_embeddings",),
}


def train_parser():
    parser = FlagParser(
        prog="attention-zoo train entailment",
        description="Train a decomposable-attention entailment classifier, "
        "evaluate it and export it.",
    )
    parser.add_argument(
        "--data",
        help="SNLI/MultiNLI .jsonl, a folder of s1/s2/labels.<split> files, "
        "SICK.txt, or premise<TAB>hypothesis<TAB>label .tsv; default: "
        "generated data",
    )
    parser.add_argument("--format", default="auto", choices=data.FORMATS)
    parser.add_argument(
        "--train-split",
        help="split to train on (folder of split files: default 'train'; "
        "SICK: 'train')",
    )
    parser.add_argument(
        "--test-split",
        help="split to test on (folder of split files: default 'test'; "
        "SICK: 'test')",
    )
    parser.add_argument(
        "--validation-fraction",
        type=float,
        default=0.1,
        help="share of the training data held out for validation (SICK "
        "uses its TRIAL split instead)",
    )
    parser.add_argument("--synthetic-examples", type=int, default=8000)
    parser.add_argument("--intra-attention", action="store_true")
    parser.add_argument(
        "--no-attention",
        action="store_true",
        help="train the no-attention baseline instead",
    )
    parser.add_argument(
        "--word-vectors",
        metavar="glove-6b-50d|FILE|none",
        help="word vectors the embeddings start from: 'glove-6b-50d' "
        "(GloVe 6B, 50-d, from the [glove] extra: the default on real data "
        "where it is installed), a GloVe/word2vec text file (give its "
        "--embedding-dim), or 'none' (random)",
    )
    parser.add_argument(
        "--fixed-embeddings",
        action="store_true",
        help="keep the word vectors fixed (random or --word-vectors)",
    )
    train_flags.add_training_arguments(parser)
    parser.add_argument("--embedding-dim", type=int)
    parser.add_argument("--hidden-units", type=int)
    parser.add_argument("--vocabulary-size", type=int)
    parser.add_argument("--max-length", type=int)
    parser.add_argument("--dropout", type=float)
    train_flags.add_run_arguments(
        parser, "entailment", "checkpoints, vocabulary, config, pictures"
    )
    return parser


INFER_PROG = "attention-zoo predict"


def infer_parser():
    """The parser of `attention-zoo predict` (`infer.py`)."""
    prog = INFER_PROG
    parser = infer_flags.export_parser(
        prog,
        "Classify premise / hypothesis pairs with an entailment export "
        "(`attention-zoo train entailment --export DIR`). One line per "
        "pair: premise<TAB>hypothesis<TAB>label (each class's "
        "probability).",
        [
            f'{prog} entailment-snli --premise "A man plays a guitar." '
            '--hypothesis "A man is making music."',
            f'{prog} saved_models/entailment --premise "a man is playing a '
            'guitar" --hypothesis "a person plays music"',
        ],
    )
    parser.add_argument(
        "--premise",
        action="append",
        required=True,
        help="a premise sentence (repeat with --hypothesis for more pairs)",
    )
    parser.add_argument(
        "--hypothesis",
        action="append",
        required=True,
        help="the hypothesis to classify against the premise of its pair",
    )
    parser.add_argument("--plot", metavar="PNG", help="alignment heatmap")
    return parser
