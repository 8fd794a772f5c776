"""The files of a run folder: written whole, checked when read.

Every file is written aside and renamed into place
(`attention_zoo.export.atomic_file`); weights are made in memory first
(`weights_bytes`), so a full disk fails one plain write (a `WriteError`
naming the file) rather than HDF5 half way through a file.

`progress.json` (`PROGRESS_FILE`) is the run's record. Since format 2
(`FORMAT`) it holds the epochs the weights have had (`epochs`), whether
`fit` ended (`finished`), early stopping's state, and the size and SHA-256
of each weights file (`files`). `write_weights` commits a weights file in
three steps, so that a kill or a full disk at any point leaves a file
that matches the record: the new record is noted as `pending`, the file
is renamed into place, then the record is updated. A reader
(`checked_progress`) takes the pending record when the file matches it.
Folders written before format 2 have no `files`: their weights are only
checked to be a whole HDF5 file (`check_hdf5`).

A damaged file (cut short, changed, not JSON) raises `RunFileError`,
whose message names the file and what to do about it.
"""

import contextlib
import hashlib
import io
import json
import os
import shutil
import tempfile

import h5py
from keras.src.saving import saving_lib

from attention_zoo.export.atomic_file import TEMPORARY_MARK
from attention_zoo.export.atomic_file import WriteError
from attention_zoo.export.atomic_file import write_bytes
from attention_zoo.export.atomic_file import write_text

FORMAT = 2
WEIGHTS_FILE = "model.weights.h5"
BEST_WEIGHTS_FILE = "best.weights.h5"  # early stopping's best epoch
PROGRESS_FILE = "progress.json"
BACKUP_DIR = "backup"  # `training.RunBackup`'s
BACKUP_METADATA = "training_metadata.json"
LEGACY_BACKUP_WEIGHTS = "latest.weights.h5"  # Keras's `BackupAndRestore`
START_ANEW = "Give --overwrite to start the run anew (or another --run-dir)."


class RunFileError(ValueError):
    """A run folder's file is damaged: `path`, `problem`, `advice`."""

    def __init__(self, path, problem, advice=START_ANEW):
        self.path = os.fspath(path)
        advice = f" {advice}" if advice else ""
        super().__init__(f"{self.path} {problem}.{advice}")


def backup_advice(directory):
    """What to do about a damaged backup of the run in `directory`."""
    backup = os.path.join(directory, BACKUP_DIR)
    return (
        f"Delete {backup} to go on from the epochs recorded in "
        f"{os.path.join(directory, PROGRESS_FILE)}, or give --overwrite "
        "to start the run anew."
    )


def read_json(path, advice=START_ANEW):
    """The JSON object in `path`; a `RunFileError` when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RunFileError(
            path, f"is not readable JSON ({error}): a damaged record", advice
        ) from None
    except OSError as error:
        raise RunFileError(
            path, f"cannot be read ({error.strerror or error})", advice
        ) from None
    if not isinstance(value, dict):
        raise RunFileError(path, "holds no JSON object", advice)
    return value


def read_progress(directory):
    """The dict in `directory`'s `PROGRESS_FILE` ({} when there is none);
    a `RunFileError` when it is damaged."""
    path = os.path.join(directory, PROGRESS_FILE)
    if not os.path.exists(path):
        return {}
    return read_json(path)


def write_progress(directory, **fields):
    """Updates `fields` of `directory`'s `PROGRESS_FILE` (a field given as
    None is removed); the file is written whole, then renamed."""
    progress = {**read_progress(directory), **fields}
    progress = {k: v for k, v in progress.items() if v is not None}
    write_text(os.path.join(directory, PROGRESS_FILE), json.dumps(progress))


def begin_progress(directory):
    """At `fit`'s start: a new record (format 2, no epoch) unless the folder
    holds a run to go on with (weights or a backup); then `finished` is
    set to False until `fit` ends."""
    has_run = os.path.exists(os.path.join(directory, WEIGHTS_FILE))
    if has_run or os.path.isdir(os.path.join(directory, BACKUP_DIR)):
        write_progress(directory, finished=False)
    else:
        progress = {"format": FORMAT, "epochs": 0, "finished": False}
        write_text(os.path.join(directory, PROGRESS_FILE), json.dumps(progress))


def is_recorded(progress):
    """Whether `progress` is format 2 or later (its weights are recorded)."""
    return "format" in progress or "files" in progress


def weights_bytes(model):
    """The `.weights.h5` file `model.save_weights` writes (with the
    optimizer's state), made in memory: HDF5 never writes to disk."""
    if not model.built:
        raise ValueError("The model is not built: it has no weights to save.")
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not optimizer.built:
        # A model that never trained (one from an export): its optimizer's
        # slots, zeros, are saved too, as `training.load_weights` builds
        # them before it loads.
        optimizer.build(model.trainable_variables)
    try:
        buffer = io.BytesIO()
        store = saving_lib.H5IOStore(buffer, mode="w")
        saving_lib._save_state(
            model,
            weights_store=store,
            assets_store=None,
            inner_path="",
            visited_saveables=set(),
        )
        store.close()
        return buffer.getvalue()
    except (ImportError, AttributeError, TypeError):
        # Another Keras: its own writer, into a private folder.
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, WEIGHTS_FILE)
            model.save_weights(path)
            with open(path, "rb") as f:
                return f.read()


def record_of(data):
    """`{"size", "sha256"}` of bytes."""
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def file_record(path):
    """`record_of` a file's content, read in chunks."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"size": size, "sha256": digest.hexdigest()}


def write_weights(directory, name, model, **fields):
    """Writes `model`'s weights to `directory/name` and records them (and
    `fields`, e.g. `epochs`) in `PROGRESS_FILE` (see the module's doc)."""
    data = weights_bytes(model)
    record = record_of(data)
    _settle_pending(directory)
    pending = {"file": name, "record": record, "fields": fields}
    write_progress(directory, pending=pending)
    write_bytes(os.path.join(directory, name), data)
    files = {**read_progress(directory).get("files", {}), name: record}
    write_progress(directory, files=files, pending=None, **fields)


def _settle_pending(directory):
    """Takes or drops the pending record a failed `write_weights` left,
    by whether its file matches it, before another is noted."""
    pending = read_progress(directory).get("pending")
    if not pending:
        return
    path = os.path.join(directory, pending["file"])
    if os.path.exists(path) and file_record(path) == pending["record"]:
        files = read_progress(directory).get("files", {})
        write_progress(
            directory,
            files={**files, pending["file"]: pending["record"]},
            pending=None,
            **pending.get("fields", {}),
        )
    else:
        write_progress(directory, pending=None)


def check_file(path, record, advice=START_ANEW, recorded_in=PROGRESS_FILE):
    """A `RunFileError` unless `path`'s content matches `record`."""
    if not os.path.exists(path):
        raise RunFileError(
            path, f"is missing (recorded in {recorded_in})", advice
        )
    size = os.path.getsize(path)
    if size != record.get("size"):
        raise RunFileError(
            path,
            f"is {size} bytes where {recorded_in} records "
            f"{record.get('size')}: cut short or changed",
            advice,
        )
    if file_record(path)["sha256"] != record.get("sha256"):
        raise RunFileError(
            path,
            f"does not match the checksum recorded in {recorded_in}: "
            "damaged or changed",
            advice,
        )


def check_hdf5(path, advice=START_ANEW):
    """A `RunFileError` unless `path` is a whole, readable HDF5 file (the
    check for weights written before they were recorded)."""

    def read(_, item):
        if isinstance(item, h5py.Dataset):
            item[()]

    if not os.path.exists(path):
        raise RunFileError(path, "is missing", advice)
    try:
        with h5py.File(path, "r") as f:
            f.visititems(read)
    except (OSError, RuntimeError, ValueError, KeyError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error)
        raise RunFileError(
            path, f"is not a whole weights file ({reason})", advice
        ) from None


def checked_progress(directory, names=(WEIGHTS_FILE,), advice=START_ANEW):
    """`read_progress`, with each of `names` present in `directory`
    checked against its record (or, unrecorded in a folder written before
    format 2, read through `check_hdf5`); a pending record the file
    matches is taken, with its fields (see the module's doc).

    Raises:
        RunFileError: a damaged `PROGRESS_FILE` or weights file.
    """
    progress = read_progress(directory)
    pending = progress.pop("pending", None) or {}
    files = dict(progress.get("files", {}))
    for name in names:
        path = os.path.join(directory, name)
        if pending.get("file") == name and os.path.exists(path):
            if file_record(path) == pending.get("record"):
                files[name] = pending["record"]
                progress.update(pending.get("fields", {}))
                continue
        if name in files:
            check_file(path, files[name], advice)
        elif os.path.exists(path) and not is_recorded(progress):
            check_hdf5(path, advice)
    if files:
        progress["files"] = files
    return progress


def read_backup(directory):
    """`(weights path, epoch)` of the backup in `directory/backup`,
    checked (None when there is none).

    Raises:
        RunFileError: a damaged backup (no metadata, metadata not JSON,
            weights cut short or not matching their record).
    """
    backup = os.path.join(directory, BACKUP_DIR)
    if not os.path.isdir(backup):
        return None
    advice = backup_advice(directory)
    path = os.path.join(backup, BACKUP_METADATA)
    if not os.path.exists(path):
        raise RunFileError(backup, f"holds no {BACKUP_METADATA}", advice)
    metadata = read_json(path, advice)
    epoch = metadata.get("epoch")
    if not isinstance(epoch, int) or epoch < 0:
        raise RunFileError(path, f"holds no epoch ({metadata!r})", advice)
    weights = os.path.join(
        backup, os.path.basename(metadata.get("weights", LEGACY_BACKUP_WEIGHTS))
    )
    if "sha256" in metadata:
        check_file(weights, metadata, advice, recorded_in=path)
    else:  # Keras's own backup, from before format 2
        check_hdf5(weights, advice)
    return weights, epoch


def check_resumable(directory):
    """A `RunFileError` before `fit` writes anything, unless what a run
    resumed in `directory` reads is whole: `PROGRESS_FILE`, the backup
    (`read_backup`) and early stopping's best weights."""
    checked_progress(directory, names=(BEST_WEIGHTS_FILE,))
    read_backup(directory)


def write_backup(directory, model, epoch, batch=0):
    """Writes the backup of `model` after `epoch` (and `batch`): a new
    weights file, then the metadata naming it (the commit), then the old
    weights file is removed. A new backup folder is made aside and
    renamed into place, so that a `backup/` always holds a whole backup."""
    data = weights_bytes(model)
    name = f"epoch{epoch}-batch{batch}.weights.h5"
    metadata = {"epoch": epoch, "batch": batch, "weights": name}
    metadata.update(record_of(data))
    backup = os.path.join(directory, BACKUP_DIR)
    if not os.path.isdir(backup):
        staging = tempfile.mkdtemp(
            prefix=f".{BACKUP_DIR}{TEMPORARY_MARK}", dir=directory
        )
        try:
            write_bytes(os.path.join(staging, name), data)
            write_text(
                os.path.join(staging, BACKUP_METADATA), json.dumps(metadata)
            )
            os.chmod(staging, 0o777 & ~_umask())
            os.rename(staging, backup)
        except WriteError as error:  # named where it was going
            shutil.rmtree(staging, ignore_errors=True)
            target = os.path.join(backup, os.path.basename(error.path))
            raise WriteError(target, error.cause) from error.cause
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return
    write_bytes(os.path.join(backup, name), data)
    write_text(os.path.join(backup, BACKUP_METADATA), json.dumps(metadata))
    for entry in os.listdir(backup):
        if entry != name and entry.endswith(".h5"):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(backup, entry))


def remove_backup(directory):
    """Removes `directory/backup`: renamed aside first, so that a kill
    never leaves part of one."""
    backup = os.path.join(directory, BACKUP_DIR)
    if not os.path.isdir(backup):
        return
    try:
        aside = tempfile.mkdtemp(
            prefix=f".{BACKUP_DIR}{TEMPORARY_MARK}", dir=directory
        )
        os.rename(backup, os.path.join(aside, BACKUP_DIR))
    except OSError:  # e.g. no room for a folder: removed in place
        aside = backup
    shutil.rmtree(aside, ignore_errors=True)


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask
