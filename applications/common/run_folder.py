"""What a `--run-dir` holds, and what `attention-zoo train` may do with it.

A run folder is in one of three states (`state`):

- `FRESH`: nothing there, or a run stopped before its first epoch ended:
  a new run starts.
- `INTERRUPTED`: `BackupAndRestore` left its `backup/`: the run resumes
  with its own config from its last finished epoch.
- `FINISHED`: a config and weights, no backup. With the same config the
  run goes on (more epochs) or is only evaluated and exported again (no
  more epochs); with another config it is never replaced without
  `--overwrite` (`start`, which `SavedBundle.start_run` calls).

`progress.json` records the epochs the weights have had (written after
every epoch by `training.checkpoint_callbacks`; folders written before
it existed count their config's `epochs`) and early stopping's state: a
run that stopped early (`--patience`) is finished whatever its epochs.
"""

import contextlib
import dataclasses
import os
import shutil

from applications.common import precision
from applications.common import training

FRESH = "fresh"
INTERRUPTED = "interrupted"
FINISHED = "finished"
CONFIG_FILE = "config.json"
BEST_WEIGHTS_FILE = "best.weights.h5"  # early stopping's best epoch
# Fields that may change between the runs of one folder: more epochs
# continue a finished run.
CONTINUABLE = ("epochs",)


def state(run_dir):
    """`FRESH`, `INTERRUPTED` or `FINISHED` (see the module's doc)."""
    if training.has_backup(run_dir):
        return INTERRUPTED
    if os.path.exists(os.path.join(run_dir, CONFIG_FILE)) and os.path.exists(
        os.path.join(run_dir, training.WEIGHTS_FILE)
    ):
        return FINISHED
    return FRESH


def read_config(run_dir, config_class):
    """The `config_class` saved in `run_dir`.

    Raises:
        ValueError: naming the file, when it is not JSON or not a
            `config_class` (e.g. another application's run).
    """
    path = os.path.join(run_dir, CONFIG_FILE)
    with open(path) as f:
        text = f.read()
    try:
        return config_class.from_json(text)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path}: {error}") from None


def trained_epochs(run_dir, config):
    """The epochs the weights in `run_dir` have had: `progress.json`'s
    count, else (older folders) the saved `config`'s `epochs`."""
    return int(training.read_progress(run_dir).get("epochs", config.epochs))


def stopped_early(run_dir):
    """`(stopped, best_epoch)`: whether the run in `run_dir` stopped
    early (`--patience`), and the epoch whose weights it kept."""
    progress = training.read_progress(run_dir)
    return bool(progress.get("stopped_early")), progress.get("best_epoch")


def differences(saved, wanted, ignore=CONTINUABLE):
    """`[(field, saved value, wanted value)]` for the config fields that
    differ, leaving out `ignore`."""
    return [
        (field.name, getattr(saved, field.name), getattr(wanted, field.name))
        for field in dataclasses.fields(saved)
        if field.name not in ignore
        and getattr(saved, field.name) != getattr(wanted, field.name)
    ]


def describe(changes):
    """`"model: 'rnn' there, 'transformer' now; ..."` of `differences`."""
    return "; ".join(
        f"{name}: {old!r} there, {new!r} now" for name, old, new in changes
    )


def clear(run_dir):
    """Removes a run's config, weights, progress and backup from
    `run_dir` (`--overwrite`); the new run rewrites its vocabularies."""
    for name in (
        CONFIG_FILE,
        training.WEIGHTS_FILE,
        training.PROGRESS_FILE,
        BEST_WEIGHTS_FILE,
    ):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(run_dir, name))
    shutil.rmtree(
        os.path.join(run_dir, training.BACKUP_DIR), ignore_errors=True
    )


def start(
    bundle_class,
    run_dir,
    strategy,
    create,
    precision_flag=None,
    parser=None,
    overwrite=False,
):
    """The bundle an `attention-zoo train APP` run trains, by what
    `run_dir` holds (this module):

    - an interrupted run (its backup): resumed with its own config
      and vocabularies (`fit` restores the weights);
    - a finished run: loaded with its weights when `create()`'s config
      is the same but for `epochs`. `initial_epoch` is set to the
      epochs it had, and the config takes the new `epochs` when they
      are more (`fit_run` trains on; else it skips training). Another
      config is refused, naming the fields that differ;
    - else `create()`.

    With `overwrite`, a run already there is not looked at and
    `create()` starts anew (`fit_run` clears the folder before
    training). Then the global dtype policy is set to the run's
    precision (`precision.use_run_precision`; a `--precision` flag
    that differs from a resumed run's is reported and ignored).
    With `parser`, a `ValueError` from `create()` (a config check: a
    bad flag value) and a refusal are the command's usage errors
    rather than tracebacks.
    """

    def refuse(message):
        if parser is None:
            raise ValueError(message)
        parser.error(message)

    found = state(run_dir)
    if overwrite and found != FRESH:
        # `fit_run` removes it, after the data are checked.
        print(f"--overwrite: the run in {run_dir} will be replaced")
        found = FRESH
    if found != FRESH:
        try:
            saved = read_config(run_dir, bundle_class.config_class)
        except ValueError as error:
            refuse(
                f"{run_dir} holds no {bundle_class.application} run to go "
                f"on with ({error}). Give another --run-dir, or --overwrite "
                "to replace it."
            )
    if found == INTERRUPTED:
        print(f"Resuming the interrupted run in {run_dir}")
        bundle = bundle_class.load_assets(run_dir, strategy)
    else:
        try:
            bundle = create()
        except ValueError as error:
            if parser is None:
                raise
            parser.error(str(error))
    if found == FINISHED:
        changes = differences(saved, bundle.config)
        if changes:
            refuse(
                f"{run_dir} holds a finished run with another "
                f"configuration ({describe(changes)}). Give "
                "another --run-dir, or --overwrite to replace it."
            )
        epochs = bundle.config.epochs
        bundle = bundle_class.load(run_dir, strategy)
        bundle.initial_epoch = trained_epochs(run_dir, saved)
        had = f"{bundle.initial_epoch} epoch"
        if bundle.initial_epoch != 1:
            had += "s"
        stopped, kept = stopped_early(run_dir)
        if stopped:
            had += f", stopped early, epoch {kept} kept"
        if epochs > bundle.initial_epoch and not stopped:
            bundle.config = bundle.config.replace(epochs=epochs)
            print(
                f"Continuing the finished run in {run_dir} ({had}) up "
                f"to epoch {epochs}"
            )
        else:
            print(
                f"The run in {run_dir} is complete ({had}): no training, "
                "only the evaluation (and --export). Give more --epochs "
                "to train on."
            )
    precision.use_run_precision(bundle.config, precision_flag)
    return bundle
