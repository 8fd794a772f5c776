"""The steps of `attention-zoo train APP`'s `main`, after its flags are read.

A `main` runs `parse_flags`, loads its data and checks the splits'
sizes (`train_flags.check_splits`), `start_run` (resumes an interrupted
run, goes on with a finished one, refuses to replace another
configuration's run without `--overwrite`), `fit_run` (trains with a
checkpoint per epoch in `--run-dir`), then on the chief evaluates
(`train_flags.note_few_examples` under scores that rest on few examples,
with the search of `flag_search`), draws and `export_next_version`. The
steps raise `flag_checks.UsageError`, which `train_flags.usage_errors`
around `main`'s set-up turns into the parser's usage error.

This module imports TensorFlow; the flags (`train_flags` and each
application's `flags`) import none, and `attention-zoo train APP` checks
them before this module is imported (`attention_zoo_apps.cli`).
"""

import dataclasses
import os

from attention_zoo.decoding import BeamSearch
from attention_zoo.export import check_model_precision
from attention_zoo.export import data_fingerprint
from attention_zoo.export import next_version
from attention_zoo_apps import registry
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.common import distribute
from attention_zoo_apps.common import flag_checks
from attention_zoo_apps.common import loaders
from attention_zoo_apps.common import precision
from attention_zoo_apps.common import precision_refusal
from attention_zoo_apps.common import run_folder
from attention_zoo_apps.common import training
from attention_zoo_apps.common import watching
from attention_zoo_apps.common import zoo
from attention_zoo_apps.common.flag_checks import UsageError

# How many times `export_next_version` takes the next number when
# another writer took the one it picked.
EXPORT_ATTEMPTS = 10


def parse_flags(parser, argv):
    """`(args, strategy)`: the flags `parser` reads from `argv`, their
    values checked (`check_flag_values`: a `UsageError`), and the
    `--strategy` they name, made next (`multi-worker` sets up collective
    ops before TensorFlow runs), or on JAX the `--distribution`
    (`distribute.distribution_from_flag`). `main` calls it inside
    `usage_errors`."""
    args = parser.parse_args(argv)
    args.given_flags = train_flags.given_flags(parser, argv)
    parser.parsed_args = args  # `usage_errors` names the flag of a path
    train_flags.check_values(args)
    for name in flag_checks.INPUT_PATH_FLAGS:
        if getattr(args, name, None):
            # A FIFO is read once, however often the loaders read it.
            loaders.keep_stream(getattr(args, name))
    strategy = distribute.strategy_from_flag(args.strategy)
    distribution = distribute.distribution_from_flag(args.distribution)
    return args, distribution or strategy


def start_run(bundle_class, args, strategy, create, config=None):
    """The bundle the run in `--run-dir` trains: the interrupted run's
    there, the finished run's (same flags; more `--epochs` train on),
    else `create()` (with `--init-from`, the export's bundle instead,
    `init_from`; `config()` is the config the flags ask for), at the
    `--precision` (see `run_folder.start`; a bad config value, a
    `--run-dir` that is a file, a finished run of other flags without
    `--overwrite`, or an `--export` folder of another model
    (`check_export_folder`) is a `UsageError`)."""
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
    `FINE_TUNING_FIELDS` of `wanted` (the flags' config; and of those
    the application's `flags.FINE_TUNING_FIELDS` adds, the ones given as
    flags) and recompiled
    for them; its vocabularies are kept (new words go through the
    subwords). A flag given for another field (its own name, or one the
    application's `flags.FIELD_FLAGS` lists for it) whose value differs
    from the export's is a `UsageError` naming both values."""
    try:
        path = zoo.resolve(args.init_from)
        bundle = bundle_class.from_export(path, strategy)
    except (OSError, ValueError) as error:
        raise UsageError(f"--init-from {args.init_from}: {error}") from None
    given = getattr(args, "given_flags", set())
    app_flags = registry.get(bundle_class.application).flags()
    field_flags = app_flags.FIELD_FLAGS
    # The application's training options: the flag's value when given,
    # else the export's (a fine-tuned model keeps its dropout).
    options = getattr(app_flags, "FINE_TUNING_FIELDS", ())
    fine_tuning = train_flags.FINE_TUNING_FIELDS + options
    taken = [
        name for name in fine_tuning if name not in options or name in given
    ]
    conflicts = []
    for field in dataclasses.fields(wanted):
        name = field.name
        if name in fine_tuning:
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
        **{name: getattr(wanted, name) for name in taken}
    )
    with distribute.scope(strategy):
        with precision.policy_scope(bundle.config.precision):
            bundle.build()  # the optimizer at the new learning rate
    print(
        f"--init-from {args.init_from}: fine-tuning {path} "
        f"({bundle.model.count_params():,} parameters, its vocabularies)"
    )
    return bundle


def fit_run(
    bundle,
    args,
    strategy,
    *examples,
    watched=None,
    chief_callbacks=(),
    **fit_kwargs,
):
    """`bundle.fit(*examples, **fit_kwargs)` with a checkpoint per epoch
    in `--run-dir`, from the bundle's `initial_epoch` (nothing when a
    finished run has all its epochs; with `--overwrite`, the run there is
    removed first), logged there on the chief (`watching.run_callbacks`:
    `history.csv` and, unless `--no-tensorboard`, TensorBoard's logs,
    with the attention of the first of the `watched` examples, as `fit`
    takes `validation`, each epoch; appended to when the run resumes or
    goes on, removed when it starts anew), and with the
    `chief_callbacks` there. Returns whether this is the chief, which
    evaluates, draws and exports next (the other workers stop)."""
    chief = distribute.is_chief(strategy)
    if bundle.initial_epoch < bundle.config.epochs:
        # A full disk or a damaged run file: one line, exit code 1; an
        # int8 export of a model without large layers, refused before
        # the first epoch: one line, exit code 2.
        command = f"attention-zoo train {bundle.application}"
        with (
            run_folder.reported_errors(command),
            precision_refusal.refusals(command),
        ):
            if args.overwrite and chief:
                run_folder.clear(args.run_dir)  # what `start_run` replaces
            callbacks = []
            export_precision = _export_precision(args)
            if export_precision != "float32":  # given with --export only
                callbacks.append(
                    precision_refusal.ExportPrecisionCheck(
                        bundle, export_precision
                    )
                )
            if chief:
                if not bundle.initial_epoch and not training.has_backup(
                    args.run_dir
                ):
                    watching.clear(args.run_dir)  # a run that starts anew
                callbacks += watching.run_callbacks(
                    bundle, args.run_dir, watched, args.tensorboard
                ) + list(chief_callbacks)
            try:
                bundle.fit(
                    *examples,
                    checkpoint_dir=args.run_dir,
                    initial_epoch=bundle.initial_epoch,
                    patience=args.patience,
                    callbacks=callbacks,
                    **fit_kwargs,
                )
            finally:
                watching.close(callbacks)
    return chief


def print_logs_line(args):
    """After training: where `--run-dir`'s logs are and how to open them
    (nothing without TensorBoard logs)."""
    line = watching.logs_line(args.run_dir)
    if line:
        print(line)


def check_export_folder(export, application):
    """A `UsageError`, before training, unless `--export` names a folder
    of `application`'s versions (or a new one): not a file, not one
    version, not another application's model (TF Serving serves a
    folder's highest version as one model)."""
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
    return BeamSearch(beam_size=args.beam_size)


def export_next_version(bundle, args, metrics, examples, **export_kwargs):
    """`--export DIR`: exports `bundle` as the next version under DIR.

    Args:
        bundle: the trained `SavedBundle`.
        args: the parsed flags (`export`, `jit_compile`,
            `export_precision`).
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
    export_precision = _export_precision(args)
    if export_precision != "float32":
        # Asked before the first epoch too; a finished run goes on to its
        # export without training.
        command = f"attention-zoo train {bundle.application}"
        with precision_refusal.refusals(command):
            check_model_precision(bundle.model, export_precision)
    fingerprint = data_fingerprint(examples)
    for attempt in range(EXPORT_ATTEMPTS):
        path = os.path.join(args.export, str(next_version(args.export)))
        try:
            bundle.export(
                path,
                jit_compile=train_flags.jit_compile_option(args.jit_compile),
                precision=export_precision,
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


def _export_precision(args):
    """`--export-precision` (float32 where the flag does not exist)."""
    return getattr(args, "export_precision", "float32")
