"""The flags every `attention-zoo train APP` has, and the config they make.

Each application's `train.py` adds its own flags around these and lists
the config fields its flags set; a flag left out keeps the config's
default (or the generated data's, `SYNTHETIC_DEFAULTS`).
`--export DIR` writes the next version under DIR with the
`--jit-compile on|off|auto` setting (`export_next_version`).

A `main` runs `parse_flags`, `start_run` (resumes an interrupted run),
`fit_run` (trains with a checkpoint per epoch in `--run-dir`), then on the
chief evaluates, draws and `export_next_version`.
"""

import os

from applications.common import distribute
from applications.common import precision
from attention_zoo.export import data_fingerprint
from attention_zoo.export import next_version

# The config fields `add_training_arguments`' flags set.
TRAINING_FIELDS = ("epochs", "batch_size", "learning_rate", "precision")
# `--jit-compile` values -> the `jit_compile` argument of `export`.
JIT_COMPILE_CHOICES = {"on": True, "off": False, "auto": None}


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
    add_jit_compile_flag(parser)
    parser.add_argument("--seed", type=int, default=0)


def parse_flags(parser, argv):
    """`(args, strategy)`: the flags `parser` reads from `argv` and the
    `--strategy` they name, made first (`multi-worker` sets up collective
    ops before TensorFlow runs)."""
    args = parser.parse_args(argv)
    return args, distribute.strategy_from_flag(parser, args.strategy)


def start_run(bundle_class, parser, args, strategy, create):
    """The bundle the run in `--run-dir` trains: the interrupted run's
    there, else `create()`, at the `--precision` (see
    `SavedBundle.start_run`; a bad config value is a usage error)."""
    return bundle_class.start_run(
        args.run_dir, strategy, create, args.precision, parser
    )


def fit_run(bundle, args, strategy, *examples, **fit_kwargs):
    """`bundle.fit(*examples, **fit_kwargs)` with a checkpoint per epoch
    in `--run-dir`. Returns whether this is the chief, which evaluates,
    draws and exports next (the other workers stop)."""
    bundle.fit(*examples, checkpoint_dir=args.run_dir, **fit_kwargs)
    return distribute.is_chief(strategy)


def config_values(args, defaults, fields, **values):
    """A run's config as a dict: `defaults`, then the seed and `values`,
    then each of `TRAINING_FIELDS` and `fields` (config fields named as
    their flags) whose flag was given."""
    config = {**defaults, "seed": args.seed, **values}
    for field in TRAINING_FIELDS + tuple(fields):
        if getattr(args, field) is not None:
            config[field] = getattr(args, field)
    return config


def add_jit_compile_flag(parser):
    """Adds `--jit-compile on|off|auto` (for `--export`) to `parser`."""
    parser.add_argument(
        "--jit-compile",
        choices=tuple(JIT_COMPILE_CHOICES),
        default="auto",
        help="XLA-compile the exported model (auto: on when a GPU is "
        "visible; TF Serving runs XLA on CPU only with "
        "--xla_cpu_compilation_enabled=true)",
    )


def jit_compile_option(flag):
    """The `export(..., jit_compile=)` value of a `--jit-compile` flag."""
    return JIT_COMPILE_CHOICES[flag]


def export_next_version(bundle, args, metrics, examples, **export_kwargs):
    """`--export DIR`: exports `bundle` as the next version under DIR.

    Args:
        bundle: the trained `SavedBundle`.
        args: the parsed flags (`export`, `jit_compile`).
        metrics: dict of test metrics for the metadata.
        examples: the training examples, an iterable fingerprinted with
            `attention_zoo.export.data_fingerprint`.
        **export_kwargs: more arguments of `bundle.export`.

    Returns:
        The version folder written.
    """
    path = os.path.join(args.export, str(next_version(args.export)))
    bundle.export(
        path,
        jit_compile=jit_compile_option(args.jit_compile),
        metrics=metrics,
        data_fingerprint=data_fingerprint(examples),
        **export_kwargs,
    )
    print(f"exported {path}")
    return path
