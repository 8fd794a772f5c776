"""The flags every `attention-zoo train APP` has, their checks and the
config they make.

Each application's `flags.train_parser()` adds its own flags around these,
and its `train.py` lists the config fields its flags set; a flag left out
keeps the config's default (or the generated data's, `SYNTHETIC_DEFAULTS`).
`--export DIR` writes the next version under DIR with the
`--jit-compile on|off|auto` setting (`train_steps.export_next_version`).

Flag values are checked before TensorFlow is imported or data is read:
this module and the applications' `flags` import no TensorFlow, and
`attention-zoo train APP` checks every flag (`precheck`) before it
imports the application's `train` (`attention_zoo_apps.cli`). The checks raise
`flag_checks.UsageError` and take no parser: `main` runs its set-up
inside `usage_errors(parser)`, the one place that turns such an error
(and a loader's `ValueError` or `OSError`) into the parser's usage
error, one line under a one-line usage hint (`flag_checks.FlagParser`).
What `main` does with the flags is `train_steps`.
"""

import argparse
import contextlib
import copy
import math
import os

from attention_zoo_apps import registry
from attention_zoo_apps.common import flag_checks
from attention_zoo_apps.common.flag_checks import UsageError

# The config fields `add_training_arguments`' flags set.
TRAINING_FIELDS = ("epochs", "batch_size", "learning_rate", "precision")
# What `--init-from` takes from the flags; the export's config keeps the
# rest (its sizes and vocabularies are the weights').
FINE_TUNING_FIELDS = ("epochs", "batch_size", "learning_rate", "seed")
# `--jit-compile` values -> the `jit_compile` argument of `export`.
JIT_COMPILE_CHOICES = {"on": True, "off": False, "auto": None}


def precheck(app, argv):
    """`attention-zoo train APP`'s usage errors, before the application's
    training code (and TensorFlow) is imported: APP's parser (its
    `flags` module, which imports no TensorFlow) reads `argv`, answers
    `--help`, and the values are checked (`check_values`); a bad one is a
    usage error (exit code 2)."""
    parser = registry.get(app).flags().train_parser()
    args = parser.parse_args(argv)
    with usage_errors(parser):
        check_values(args, app)


def check_values(args, application=None):
    """The `UsageError`s of `check_flag_values`, `--export-precision int8`
    without `--export` or with `--jit-compile on`,
    `--export-fold-batch-norms` without `--export`, and `--patience` or
    `--choose-search` without a validation split (`application` names the
    export folder to give in place of a version)."""
    flag_checks.check_flag_values(args, application)
    if getattr(args, "export_precision", "float32") != "float32":
        if not getattr(args, "export", None):
            raise UsageError(
                f"--export-precision {args.export_precision} is the "
                "export's: give --export DIR"
            )
        if getattr(args, "jit_compile", None) == "on":
            raise UsageError(
                f"--export-precision {args.export_precision} runs oneDNN's "
                "int8 kernels, which XLA cannot compile: leave out "
                "--jit-compile on"
            )
    if getattr(args, "export_fold_batch_norms", False):
        if not getattr(args, "export", None):
            raise UsageError(
                "--export-fold-batch-norms is the export's: give --export DIR"
            )
    if getattr(args, "patience", None) is not None:
        if getattr(args, "validation_fraction", None) == 0:
            raise UsageError(
                "--patience watches the validation loss: it needs a "
                "validation split (--validation-fraction above 0)"
            )
    if getattr(args, "average_checkpoints", None) not in (None, 1):
        if getattr(args, "patience", None) is not None:
            raise UsageError(
                "--average-checkpoints averages the last epochs, --patience "
                "keeps the best one: give one of them"
            )
    if getattr(args, "choose_search", False):
        if getattr(args, "validation_fraction", None) == 0:
            raise UsageError(
                "--choose-search decodes the validation split: it needs "
                "one (--validation-fraction above 0)"
            )
        if "beam_size" in getattr(args, "given_flags", set()):
            raise UsageError(
                "--choose-search picks the beam size on the validation "
                "split: leave --beam-size out"
            )


def add_training_arguments(parser):
    """`--epochs`, `--patience`, `--batch-size`, `--strategy`,
    `--distribution`, `--precision` and `--learning-rate`."""
    parser.add_argument("--epochs", type=int, help="the most epochs")
    parser.add_argument(
        "--patience",
        type=int,
        metavar="N",
        help="stop when the validation loss has not improved for N epochs "
        "and keep the best epoch's weights",
    )
    parser.add_argument(
        "--batch-size", type=int, help=flag_checks.BATCH_SIZE_HELP
    )
    parser.add_argument(
        "--strategy",
        choices=flag_checks.STRATEGIES,
        default="default",
        help=flag_checks.STRATEGY_HELP,
    )
    parser.add_argument(
        "--distribution",
        choices=flag_checks.DISTRIBUTIONS,
        help=flag_checks.DISTRIBUTION_HELP,
    )
    parser.add_argument(
        "--precision",
        choices=flag_checks.PRECISIONS,
        default=None,
        help=flag_checks.PRECISION_HELP,
    )
    parser.add_argument("--learning-rate", type=float)


def add_run_arguments(parser, app, contents):
    """`--run-dir` (default `outputs/APP`; `contents` says what it holds),
    `--overwrite`, `--export`, `--init-from`, `--[no-]tensorboard`, the
    export's jit and precision flags and `--seed`."""
    parser.add_argument(
        "--run-dir",
        default=f"outputs/{app}",
        help=f"{contents}; a finished run there goes on with more --epochs "
        "(the same flags otherwise), an interrupted one resumes",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a run of another configuration in --run-dir",
    )
    parser.add_argument(
        "--export",
        metavar="DIR",
        help=f"export a new version under DIR (e.g. saved_models/{app})",
    )
    parser.add_argument(
        "--init-from",
        metavar="MODEL",
        help="fine-tune: start from a shipped model (`attention-zoo "
        "models`) or an export folder, with its weights, vocabularies and "
        "sizes; --epochs, --batch-size, --learning-rate and --seed apply",
    )
    parser.add_argument(
        "--tensorboard",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="TensorBoard logs in --run-dir/logs: losses, learning rate and "
        "a few validation examples' attention per epoch (default: on; "
        "history.csv, a row per epoch, is written all the same)",
    )
    add_jit_compile_flag(parser)
    parser.add_argument(
        "--export-precision",
        choices=flag_checks.EXPORT_PRECISIONS,
        default="float32",
        help="what the export's large Dense layers compute in: int8 runs "
        "them on oneDNN's int8 kernels (AVX-512 VNNI or AMX CPUs; not "
        "XLA-compiled), float32 (the default) as trained",
    )
    parser.add_argument("--seed", type=int, default=0)


def given_flags(parser, argv):
    """The dests of the flags given in `argv` (None: `sys.argv[1:]`),
    abbreviations and `--flag=value` included: what `parser` reads when
    no default is filled in."""
    bare = copy.deepcopy(parser)
    for action in bare._actions:
        action.default = argparse.SUPPRESS
    given, _ = bare.parse_known_args(argv)
    return set(vars(given))


@contextlib.contextmanager
def usage_errors(parser):
    """Reports a `UsageError`, `ValueError` or `OSError` raised inside (a
    flag value no run can use, a bad `--data` file, a value a loader
    rejects) as the command's usage error, `parser.error`: one line
    naming the input, exit code 2, no traceback. The one place below a
    command's `main` that calls `parser.error`. An `OSError` about
    a path reads `PATH: what` (`describe_os_error`), with the flag in
    front when the path is a flag's value (`--data PATH: a folder, not
    a file`)."""
    try:
        yield
    except OSError as error:
        if error.filename is None:
            parser.error(str(error))
        path = os.fspath(error.filename)
        flag = _path_flag(parser, path)
        where = f"{flag} {path}" if flag else path
        parser.error(f"{where}: {flag_checks.describe_os_error(error)}")
    except ValueError as error:
        parser.error(str(error))


def _path_flag(parser, path):
    """The input flag (`--data`) whose value is `path`, in the flags
    `parse_flags` read with `parser`; None if none is."""
    flags = vars(getattr(parser, "parsed_args", argparse.Namespace()))
    for name in flag_checks.INPUT_PATH_FLAGS:
        value = flags.get(name)
        if value and os.path.abspath(value) == os.path.abspath(path):
            return flag_checks.flag(name)
    return None


# Scores resting on fewer examples than this get `note_few_examples`.
FEW_EXAMPLES = 100


def check_splits(source, noun, counts, fractions=None, hint=None):
    """A `UsageError` before any training unless every split the run
    uses holds an example.

    Args:
        source: str, where the examples come from (the `--data` path, or
            "the generated data").
        noun: str, what is counted, plural ("pairs", "images").
        counts: dict, split name -> its size, for the splits the run uses
            (a split left out on purpose, e.g. `--validation-fraction 0`,
            is not in it).
        fractions: dict, split name -> `(flag, value)` for the splits cut
            by a fraction of the examples: the error says how many
            examples each needs.
        hint: str, more flags that change the splits (e.g. the split
            files' names).
    """
    empty = [name for name, count in counts.items() if count < 1]
    if not empty:
        return
    sizes = ", ".join(f"{count} {name}" for name, count in counts.items())
    names = (
        ", ".join(empty[:-1]) + " and " + empty[-1] if empty[1:] else empty[0]
    )
    advice = []
    for name in empty:
        if fractions and name in fractions:
            flag, value = fractions[name]
            if value > 0:
                advice.append(
                    f"with {flag} {value:g} the {name} split needs at least "
                    f"{math.ceil(1 / value)} {noun} (give more {noun} or "
                    f"raise {flag})"
                )
            else:
                advice.append(f"raise {flag} above 0")
    if hint:
        advice.append(hint)
    verb = "are" if empty[1:] else "is"
    message = (
        f"{source}: {sum(counts.values())} {noun} give {sizes}: the {names} "
        f"split{'s' if empty[1:] else ''} {verb} empty."
    )
    if advice:
        advice = "; ".join(advice)
        message += f" {advice[0].upper()}{advice[1:]}."
    raise UsageError(message)


def check_fraction_splits(args, source, noun, splits):
    """`check_splits` of `splits`, `(train, validation, test)`, for a run
    whose validation and test splits are `--validation-fraction` and
    `--test-fraction` of the examples (no validation at fraction 0)."""
    check_splits(
        source,
        noun,
        split_counts(*splits, args.validation_fraction > 0),
        fractions={
            "validation": ("--validation-fraction", args.validation_fraction),
            "test": ("--test-fraction", args.test_fraction),
        },
    )


def note_few_examples(name, count, noun):
    """Prints, under scores computed on `count` examples, that they rest
    on few (when fewer than `FEW_EXAMPLES`)."""
    if count < FEW_EXAMPLES:
        print(
            f"  (the {name} scores rest on {count} {noun} only, fewer than "
            f"{FEW_EXAMPLES}: read them as a rough indication)"
        )


def split_counts(train, validation, test, validation_used=True):
    """`{"train": len(train), ...}` for `check_splits`, without the
    validation split when the run leaves it out (`validation_used`)."""
    counts = {"train": len(train), "validation": len(validation)}
    if not validation_used:
        del counts["validation"]
    counts["test"] = len(test)
    return counts


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
