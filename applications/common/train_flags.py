"""The flags every `attention-zoo train APP` has, and the config they make.

Each application's `train.py` adds its own flags around these and lists
the config fields its flags set; a flag left out keeps the config's
default (or the generated data's, `SYNTHETIC_DEFAULTS`).
"""

from applications.common import distribute
from applications.common import exporting
from applications.common import precision

# The config fields `add_training_arguments`' flags set.
TRAINING_FIELDS = ("epochs", "batch_size", "learning_rate", "precision")


def add_training_arguments(parser):
    """`--epochs`, `--batch-size`, `--strategy`, `--precision` and
    `--learning-rate`."""
    parser.add_argument("--epochs", type=int)
    parser.add_argument(
        "--batch-size", type=int, help=distribute.BATCH_SIZE_HELP
    )
    distribute.add_strategy_argument(parser)
    precision.add_precision_argument(parser)
    parser.add_argument("--learning-rate", type=float)


def add_run_arguments(parser, app, contents):
    """`--run-dir` (default `outputs/APP`; `contents` says what it holds),
    `--export`, the export's jit flag and `--seed`."""
    parser.add_argument("--run-dir", default=f"outputs/{app}", help=contents)
    parser.add_argument(
        "--export",
        metavar="DIR",
        help=f"export a new version under DIR (e.g. saved_models/{app})",
    )
    exporting.add_jit_compile_flag(parser)
    parser.add_argument("--seed", type=int, default=0)


def config_values(args, defaults, fields, **values):
    """A run's config as a dict: `defaults`, then the seed and `values`,
    then each of `TRAINING_FIELDS` and `fields` (config fields named as
    their flags) whose flag was given."""
    config = {**defaults, "seed": args.seed, **values}
    for field in TRAINING_FIELDS + tuple(fields):
        if getattr(args, field) is not None:
            config[field] = getattr(args, field)
    return config
