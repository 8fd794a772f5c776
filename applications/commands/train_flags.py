"""The flags every `attention-zoo train APP` has, and the config they make.

Each application's `train.py` adds its own flags around these and lists
the config fields its flags set; a flag left out keeps the config's
default (or the generated data's, `SYNTHETIC_DEFAULTS`).
`--export DIR` writes the next version under DIR with the
`--jit-compile on|off|auto` setting (`export_next_version`).

Flag values are checked before TensorFlow is imported or data is read:
each application's parser lives in its `flags` module, which imports no
TensorFlow, and `attention-zoo train APP` checks every flag with it
(`precheck`) before it imports the application's `train`; `parse_flags`
checks them again for callers of `main(argv)`, and `main` builds the
config the flags ask for before it reads data. The checks here and
below raise `flag_checks.UsageError` and take no parser: `main` runs its
set-up inside `usage_errors(parser)`, the one place that turns such an
error (and a loader's `ValueError` or `OSError`) into the parser's
usage error, one line under a one-line usage hint
(`flag_checks.FlagParser`). This module imports neither TensorFlow nor
Keras at the top (its helpers do).

A `main` runs `parse_flags`, loads its data and checks the splits'
sizes (`check_splits`), `start_run` (resumes an interrupted run, goes on
with a finished one, refuses to replace another configuration's run
without `--overwrite`), `fit_run` (trains with a checkpoint per epoch in
`--run-dir`), then on the chief evaluates (`note_few_examples` under
scores that rest on few examples, with the search of `flag_search`),
draws and `export_next_version`.
"""

import argparse
import contextlib
import copy
import dataclasses
import importlib
import math
import os

from applications.common import flag_checks
from applications.common import loaders
from applications.common.flag_checks import UsageError

# The config fields `add_training_arguments`' flags set.
TRAINING_FIELDS = ("epochs", "batch_size", "learning_rate", "precision")
# What `--init-from` takes from the flags; the export's config keeps the
# rest (its sizes and vocabularies are the weights').
FINE_TUNING_FIELDS = ("epochs", "batch_size", "learning_rate", "seed")
# `--jit-compile` values -> the `jit_compile` argument of `export`.
JIT_COMPILE_CHOICES = {"on": True, "off": False, "auto": None}
# How many times `export_next_version` takes the next number when
# another writer took the one it picked.
EXPORT_ATTEMPTS = 10


def precheck(app, argv):
    """`attention-zoo train APP`'s usage errors, before the application's
    training code (and TensorFlow) is imported: APP's parser (its
    `flags` module, which imports no TensorFlow) reads `argv`, answers
    `--help`, and the values are checked (`check_values`); a bad one is a
    usage error (exit code 2)."""
    parser = _flags_module(app).parser()
    args = parser.parse_args(argv)
    with usage_errors(parser):
        check_values(args, app)


def _flags_module(app):
    """APP's `flags` module (its `parser()`, and its `FIELD_FLAGS`)."""
    from applications import registry

    return importlib.import_module(registry.get(app).flags_module)


def check_values(args, application=None):
    """The `UsageError`s of `check_flag_values`, and `--patience` without
    a validation split (`application` names the export folder to give in
    place of a version)."""
    flag_checks.check_flag_values(args, application)
    if getattr(args, "patience", None) is not None:
        if getattr(args, "validation_fraction", None) == 0:
            raise UsageError(
                "--patience watches the validation loss: it needs a "
                "validation split (--validation-fraction above 0)"
            )


def add_training_arguments(parser):
    """`--epochs`, `--patience`, `--batch-size`, `--strategy`,
    `--precision` and `--learning-rate`."""
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
        "--precision",
        choices=flag_checks.PRECISIONS,
        default=None,
        help=flag_checks.PRECISION_HELP,
    )
    parser.add_argument("--learning-rate", type=float)


def add_run_arguments(parser, app, contents):
    """`--run-dir` (default `outputs/APP`; `contents` says what it holds),
    `--overwrite`, `--export`, the export's jit flag and `--seed`."""
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
    add_jit_compile_flag(parser)
    parser.add_argument("--seed", type=int, default=0)


def parse_flags(parser, argv):
    """`(args, strategy)`: the flags `parser` reads from `argv`, their
    values checked (`check_flag_values`: a `UsageError`), and the
    `--strategy` they name, made next (`multi-worker` sets up collective
    ops before TensorFlow runs). `main` calls it inside `usage_errors`."""
    from applications.common import distribute

    args = parser.parse_args(argv)
    args.given_flags = given_flags(parser, argv)
    parser.parsed_args = args  # `usage_errors` names the flag of a path
    check_values(args)
    for name in flag_checks.INPUT_PATH_FLAGS:
        if getattr(args, name, None):
            # A FIFO is read once, however often the loaders read it.
            loaders.keep_stream(getattr(args, name))
    return args, distribute.strategy_from_flag(args.strategy)


def given_flags(parser, argv):
    """The dests of the flags given in `argv` (None: `sys.argv[1:]`),
    abbreviations and `--flag=value` included: what `parser` reads when
    no default is filled in."""
    bare = copy.deepcopy(parser)
    for action in bare._actions:
        action.default = argparse.SUPPRESS
    given, _ = bare.parse_known_args(argv)
    return set(vars(given))


def start_run(bundle_class, args, strategy, create, config=None):
    """The bundle the run in `--run-dir` trains: the interrupted run's
    there, the finished run's (same flags; more `--epochs` train on),
    else `create()` (with `--init-from`, the export's bundle instead,
    `init_from`; `config()` is the config the flags ask for), at the
    `--precision` (see `run_folder.start`; a bad config value, a
    `--run-dir` that is a file, a finished run of other flags without
    `--overwrite`, or an `--export` folder of another model
    (`check_export_folder`) is a `UsageError`)."""
    from applications.common import run_folder

    if os.path.exists(args.run_dir) and not os.path.isdir(args.run_dir):
        raise UsageError(f"--run-dir {args.run_dir}: a file, not a folder")
    check_export_folder(args.export, bundle_class.application)
    if getattr(args, "init_from", None):
        wanted = config()
        create = lambda: init_from(  # noqa: E731
            bundle_class, args, strategy, wanted
        )
    return run_folder.start(
        bundle_class,
        args.run_dir,
        strategy,
        create,
        args.precision,
        overwrite=args.overwrite,
    )


def init_from(bundle_class, args, strategy, wanted):
    """`--init-from MODEL`: the bundle of a shipped model's name or an
    export folder (`SavedBundle.from_export`), its config taking the
    `FINE_TUNING_FIELDS` of `wanted` (the flags' config) and recompiled
    for them; its vocabularies are kept (new words go through the
    subwords). A flag given for another field (its own name, or one the
    application's `flags.FIELD_FLAGS` lists for it) whose value differs
    from the export's is a `UsageError` naming both values."""
    from applications.common import distribute
    from applications.common import precision
    from applications.common import zoo

    try:
        path = zoo.resolve(args.init_from)
        bundle = bundle_class.from_export(path, strategy)
    except (OSError, ValueError) as error:
        raise UsageError(f"--init-from {args.init_from}: {error}") from None
    given = getattr(args, "given_flags", set())
    field_flags = _flags_module(bundle_class.application).FIELD_FLAGS
    conflicts = []
    for field in dataclasses.fields(wanted):
        name = field.name
        if name in FINE_TUNING_FIELDS:
            continue
        flags = (name, *field_flags.get(name, ()))
        mine, theirs = getattr(wanted, name), getattr(bundle.config, name)
        if mine != theirs and given & set(flags):
            conflicts.append(f"{name} is {theirs!r} there, {mine!r} here")
    if conflicts:
        raise UsageError(
            f"--init-from {args.init_from} keeps the model's sizes and "
            f"vocabularies: {'; '.join(conflicts)}. Leave those flags out."
        )
    bundle.config = bundle.config.replace(
        **{name: getattr(wanted, name) for name in FINE_TUNING_FIELDS}
    )
    with distribute.scope(strategy):
        with precision.policy_scope(bundle.config.precision):
            bundle.build()  # the optimizer at the new learning rate
    print(
        f"--init-from {args.init_from}: fine-tuning {path} "
        f"({bundle.model.count_params():,} parameters, its vocabularies)"
    )
    return bundle


def fit_run(bundle, args, strategy, *examples, **fit_kwargs):
    """`bundle.fit(*examples, **fit_kwargs)` with a checkpoint per epoch
    in `--run-dir`, from the bundle's `initial_epoch` (nothing when a
    finished run has all its epochs; with `--overwrite`, the run there is
    removed first). Returns whether this is the chief,
    which evaluates, draws and exports next (the other workers stop)."""
    from applications.common import distribute
    from applications.common import run_folder

    if bundle.initial_epoch < bundle.config.epochs:
        # A full disk or a damaged run file: one line, exit code 1.
        command = f"attention-zoo train {bundle.application}"
        with run_folder.reported_errors(command):
            if args.overwrite and distribute.is_chief(strategy):
                run_folder.clear(args.run_dir)  # what `start_run` replaces
            bundle.fit(
                *examples,
                checkpoint_dir=args.run_dir,
                initial_epoch=bundle.initial_epoch,
                patience=args.patience,
                **fit_kwargs,
            )
    return distribute.is_chief(strategy)


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


def check_export_folder(export, application):
    """A `UsageError`, before training, unless `--export` names a folder
    of `application`'s versions (or a new one): not a file, not one
    version, not another application's model (TF Serving serves a
    folder's highest version as one model)."""
    from applications.common import zoo

    if not export or not os.path.exists(export):
        return
    flag_checks.check_export_path(export, application)
    for name in sorted(os.listdir(export)):
        if not name.isdigit():
            continue
        other = zoo.exported_application(os.path.join(export, name))
        if other not in (None, application):
            raise UsageError(
                f"--export {export} holds version {name} of a {other} "
                f"model: export {application} models to a folder of their "
                f"own (e.g. saved_models/{application})"
            )


def flag_search(args):
    """The search `--beam-size N` names, for the test split and the
    export: a `BeamSearch` of `N` beams (1 is greedy search), its length
    penalty the application's default."""
    from attention_zoo.decoding import BeamSearch

    return BeamSearch(beam_size=args.beam_size)


def export_next_version(bundle, args, metrics, examples, **export_kwargs):
    """`--export DIR`: exports `bundle` as the next version under DIR.

    Args:
        bundle: the trained `SavedBundle`.
        args: the parsed flags (`export`, `jit_compile`).
        metrics: dict of test metrics for the metadata.
        examples: the training examples, an iterable fingerprinted with
            `attention_zoo.export.data_fingerprint`.
        **export_kwargs: more arguments of `bundle.export`.

    Another process may export to DIR at the same time: a version is
    never replaced (`attention_zoo.export.atomic_directory`), and when
    the number picked is taken by the time the export is written, the
    export is written again as the next free one (up to
    `EXPORT_ATTEMPTS` times). The line printed names the version
    written.

    Returns:
        The version folder written.
    """
    from attention_zoo.export import data_fingerprint
    from attention_zoo.export import next_version

    fingerprint = data_fingerprint(examples)
    for attempt in range(EXPORT_ATTEMPTS):
        path = os.path.join(args.export, str(next_version(args.export)))
        try:
            bundle.export(
                path,
                jit_compile=jit_compile_option(args.jit_compile),
                metrics=metrics,
                data_fingerprint=fingerprint,
                **export_kwargs,
            )
        except (FileExistsError, RuntimeError):
            # Taken meanwhile (a RuntimeError: by the time the export
            # process of another backend wrote it).
            if attempt + 1 == EXPORT_ATTEMPTS or not os.path.isdir(path):
                raise
            print(f"{path} was taken by another export meanwhile")
            continue
        print(f"exported {path}")
        return path
