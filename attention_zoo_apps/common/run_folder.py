"""What a `--run-dir` holds, and what `attention-zoo train` may do with it.

A run folder is in one of three states (`state`):

- `FRESH`: nothing there, or a run that recorded no epoch: a new run
  starts.
- `INTERRUPTED`: `RunBackup` left its `backup/`: the run resumes with its
  own config from its last finished epoch (other flags than the run's,
  but for `--epochs`, are refused, naming the fields that differ).
- `FINISHED`: a config and recorded weights, no backup. With the same
  config the run goes on (more epochs) or is only evaluated and exported
  again (no more epochs); with another config it is never replaced
  without `--overwrite` (`start`, which `train_steps.start_run` calls).
  A run that stopped between two epochs without a backup is one too: it
  goes on from the epochs it recorded.

`progress.json` is the run's record (`attention_zoo_apps.common.run_files`):
the epochs the weights have had, the size and checksum of each weights
file (written after it, so a truncated `model.weights.h5` beside a
`config.json` is never taken for a finished run), whether `fit` ended,
and early stopping's state: a run that stopped early (`--patience`) is
finished whatever its epochs. Folders written before the record existed
(a config and weights, maybe a `progress.json` of epochs only) count as
finished when their weights are a whole HDF5 file, with their
`progress.json`'s epochs, else their config's; `start` then records
their weights. A damaged file is refused before anything is written,
with a message naming it and what to do (`RunFileError`).

While a process works on a run folder it holds its lock
(`attention_zoo_apps.common.run_lock`): a second process is refused, naming
the holder; the lock of a process that died is taken over.
"""

import contextlib
import dataclasses
import os
import sys

from attention_zoo.export.atomic_file import WriteError
from attention_zoo.export.atomic_file import remove_temporaries
from attention_zoo_apps.common import distribute
from attention_zoo_apps.common import precision
from attention_zoo_apps.common import run_files
from attention_zoo_apps.common import run_lock
from attention_zoo_apps.common import training
from attention_zoo_apps.common import watching
from attention_zoo_apps.common import weight_averaging
from attention_zoo_apps.common.flag_checks import UsageError
from attention_zoo_apps.common.run_files import BEST_WEIGHTS_FILE
from attention_zoo_apps.common.run_files import WEIGHTS_FILE
from attention_zoo_apps.common.run_files import RunFileError

FRESH = "fresh"
INTERRUPTED = "interrupted"
FINISHED = "finished"
CONFIG_FILE = "config.json"
# Fields that may change between the runs of one folder: more epochs
# continue a finished run.
CONTINUABLE = ("epochs",)


def state(run_dir):
    """`FRESH`, `INTERRUPTED` or `FINISHED` (see the module's doc).

    Raises:
        RunFileError: `progress.json` is damaged.
    """
    if training.has_backup(run_dir):
        return INTERRUPTED
    if not (
        os.path.exists(os.path.join(run_dir, CONFIG_FILE))
        and os.path.exists(os.path.join(run_dir, WEIGHTS_FILE))
    ):
        return FRESH
    progress = run_files.read_progress(run_dir)
    pending = progress.get("pending") or {}
    if (
        run_files.is_recorded(progress)
        and WEIGHTS_FILE not in progress.get("files", {})
        and pending.get("file") != WEIGHTS_FILE
    ):
        return FRESH  # no epoch recorded
    return FINISHED


def read_config(run_dir, config_class):
    """The `config_class` saved in `run_dir`.

    Raises:
        ValueError: naming the file, when it cannot be read, is not JSON or
            not a `config_class` (e.g. another application's run).
    """
    path = os.path.join(run_dir, CONFIG_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            return config_class.from_json(f.read())
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror or error}") from None
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path}: {error}") from None


def trained_epochs(run_dir, config, progress=None):
    """The epochs the weights in `run_dir` have had: `progress`'s count
    (default: `progress.json`'s), else (older folders) the saved
    `config`'s `epochs`."""
    if progress is None:
        progress = run_files.read_progress(run_dir)
    return int(progress.get("epochs", config.epochs))


def stopped_early(run_dir, progress=None):
    """`(stopped, best_epoch)`: whether the run in `run_dir` stopped
    early (`--patience`), and the epoch whose weights it kept."""
    if progress is None:
        progress = run_files.read_progress(run_dir)
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
    """Removes a run's config, weights, progress, backup, logs
    (`watching.clear`) and kept epochs (`weight_averaging.clear`) from
    `run_dir` (`--overwrite`), and what a killed
    writer left; the new run rewrites its vocabularies."""
    for name in (CONFIG_FILE, WEIGHTS_FILE, training.PROGRESS_FILE):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(run_dir, name))
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(run_dir, BEST_WEIGHTS_FILE))
    run_files.remove_backup(run_dir)
    watching.clear(run_dir)
    weight_averaging.clear(run_dir)
    remove_temporaries(run_dir)


@contextlib.contextmanager
def reported_errors(command="attention-zoo train"):
    """Ends the command with one line on stderr and exit code 1 when its
    run folder cannot be written (`WriteError`, e.g. a full disk: the
    folder keeps its last whole files), holds a damaged file
    (`RunFileError`) or is another process's (`RunFolderBusy`)."""
    try:
        yield
    except (WriteError, RunFileError, run_lock.RunFolderBusy) as error:
        if sys.stdout.isatty():
            print(flush=True)  # below the progress bar
        print(f"{command}: error: {error}", file=sys.stderr)
        raise SystemExit(1) from None


def lock(run_dir, strategy=None):
    """Holds `run_dir`'s lock for this process's run (on the chief of a
    cluster; the other workers write elsewhere), reporting a stale lock
    taken over, and removes what a killed writer left there.

    Raises:
        RunFolderBusy: another process holds it.
    """
    if not distribute.is_chief(strategy):
        return
    stale = run_lock.hold_for_run(run_dir)
    if stale:
        print(
            f"Took over the lock of {run_dir} from "
            f"{run_lock.describe(stale)}, which no longer runs"
        )
    remove_temporaries(run_dir)
    remove_temporaries(os.path.join(run_dir, training.BACKUP_DIR))


def start(
    bundle_class,
    run_dir,
    strategy,
    create,
    precision_flag=None,
    overwrite=False,
):
    """The bundle an `attention-zoo train APP` run trains, by what
    `run_dir` holds (this module), once this process holds its lock
    (`lock`; a folder another process works on is refused, naming it):

    - an interrupted run (its backup): resumed with its own config and
      vocabularies (`fit` restores the weights) when `create()`'s config
      is the same but for `epochs` (the new `epochs` apply);
    - a finished run: loaded with its weights when `create()`'s config
      is the same but for `epochs`. `initial_epoch` is set to the
      epochs it had, and the config takes the new `epochs` when they
      are more (`fit_run` trains on; else it skips training);
    - else `create()`.

    Another config is refused, naming the fields that differ (the
    `--precision` flag included: a run keeps the precision it started
    with); so is a damaged file (`RunFileError`), before anything is
    written. With `overwrite`, a run already there is not looked at and
    `create()` starts anew (`fit_run` clears the folder before
    training). Then the global dtype policy is set to the run's
    precision (`precision.use_run_precision`). A refusal is a
    `UsageError`; a `ValueError` from `create()` (a config check: a bad
    flag value) goes up as it is: the command's `main` reports both as
    usage errors.
    """

    def refuse(message):
        raise UsageError(message) from None

    try:
        lock(run_dir, strategy)
    except run_lock.RunFolderBusy as error:
        refuse(str(error))
    except OSError as error:  # e.g. a folder this user cannot write
        refuse(f"--run-dir {run_dir}: {error.strerror or error}")
    try:
        found = state(run_dir)
    except RunFileError as error:
        if not overwrite:
            refuse(str(error))
        found = FINISHED  # a damaged run: replaced
    if overwrite and found != FRESH:
        # `fit_run` removes it, after the data are checked.
        print(f"--overwrite: the run in {run_dir} will be replaced")
        found = FRESH
    elif found == FRESH and os.path.exists(os.path.join(run_dir, CONFIG_FILE)):
        print(f"The run in {run_dir} recorded no epoch: it starts anew")
    if found != FRESH:
        try:
            saved = read_config(run_dir, bundle_class.config_class)
        except ValueError as error:
            refuse(
                f"{run_dir} holds no {bundle_class.application} run to go "
                f"on with ({error}). Give another --run-dir, or --overwrite "
                "to replace it."
            )
    try:
        if found == INTERRUPTED:
            run_files.check_resumable(run_dir)
        bundle = create()
    except RunFileError as error:
        refuse(str(error))
    if found != FRESH:
        changes = differences(saved, bundle.config)
        if changes:
            refuse(
                f"{run_dir} holds {_ARTICLES[found]} run with another "
                f"configuration ({describe(changes)}). Give the flags it "
                "was started with, another --run-dir, or --overwrite to "
                "replace it."
            )
    try:
        if found == INTERRUPTED:
            bundle = _resume(bundle_class, run_dir, strategy, bundle.config)
        elif found == FINISHED:
            bundle = _go_on(bundle_class, run_dir, strategy, bundle.config)
    except RunFileError as error:
        refuse(str(error))
    precision.use_run_precision(bundle.config, precision_flag)
    return bundle


_ARTICLES = {INTERRUPTED: "an interrupted", FINISHED: "a finished"}


def _resume(bundle_class, run_dir, strategy, wanted):
    """The interrupted run's bundle, its weights fresh (`fit` restores
    them), up to `wanted.epochs`."""
    print(f"Resuming the interrupted run in {run_dir}")
    bundle = _load(bundle_class.load_assets, run_dir, strategy)
    if wanted.epochs != bundle.config.epochs:
        bundle.config = bundle.config.replace(epochs=wanted.epochs)
        print(f"  (up to epoch {wanted.epochs})")
    return bundle


def _go_on(bundle_class, run_dir, strategy, wanted):
    """The finished run's bundle with its weights, `initial_epoch` the
    epochs it had and the config's `epochs` the `wanted` ones when more
    (see `start`). A folder written before its weights were recorded gets
    its record."""
    progress = run_files.checked_progress(run_dir)
    trained = trained_epochs(
        run_dir, read_config(run_dir, bundle_class.config_class), progress
    )
    if not run_files.is_recorded(progress) and run_lock.held(run_dir):
        path = os.path.join(run_dir, WEIGHTS_FILE)
        run_files.write_progress(
            run_dir,
            format=run_files.FORMAT,
            epochs=trained,
            files={WEIGHTS_FILE: run_files.file_record(path)},
        )
    bundle = _load(bundle_class.load, run_dir, strategy)
    bundle.initial_epoch = trained
    had = f"{trained} epoch" + ("" if trained == 1 else "s")
    stopped, kept = stopped_early(run_dir, progress)
    if stopped:
        had += f", stopped early, epoch {kept} kept"
    run = "finished run"
    if not progress.get("finished", True):  # stopped between two epochs
        run, had = "run", had + ", stopped without a backup"
    if wanted.epochs > trained and not stopped:
        bundle.config = bundle.config.replace(epochs=wanted.epochs)
        print(
            f"Continuing the {run} in {run_dir} ({had}) up to epoch "
            f"{wanted.epochs}"
        )
    else:
        print(
            f"The run in {run_dir} is complete ({had}): no training, "
            "only the evaluation (and --export). Give more --epochs "
            "to train on."
        )
    return bundle


def _load(load, run_dir, strategy):
    """`load(run_dir, strategy)`, a damaged file a `RunFileError`."""
    try:
        return load(run_dir, strategy)
    except RunFileError:
        raise
    except (OSError, ValueError) as error:
        raise RunFileError(run_dir, f"cannot be loaded ({error})") from None
