"""Usage errors of `attention-zoo train APP` that need nothing but the
flag values, found before TensorFlow is imported or any data is read.

`check_flag_values` checks what the flags an application has can be
(positive sizes and counts, fractions in [0, 1), a positive learning
rate, readable inputs, a `--run-dir` and an `--export` that are not
files). A check below a command's `main` raises `UsageError`; only
`main` (through `train_flags.usage_errors`) turns it into the parser's
error, which `FlagParser` reports in two lines (a usage hint, then
`prog: error: message`) rather than the usage of every flag. This
module imports only the standard library.
"""

import argparse
import errno
import math
import os
import stat

# Flags (dests) whose values must be positive integers, in any
# application that has them.
POSITIVE_INT_FLAGS = (
    "epochs",
    "batch_size",
    "patience",
    "embedding_dim",
    "hidden_units",
    "units",
    "decoder_layers",
    "vocabulary_size",
    "max_length",
    "max_events",
    "max_pairs",
    "warmup_steps",
    "average_checkpoints",
    "max_images",
    "beam_size",
    "image_size",
    "synthetic_examples",
    "synthetic_pairs",
    "synthetic_images",
    "synthetic_patients",
)
# Flags whose values are fractions in [0, 1).
FRACTION_FLAGS = (
    "validation_fraction",
    "test_fraction",
    "dropout",
    "attention_dropout",
    "label_smoothing",
)
# Flags naming inputs that must exist and be readable.
INPUT_PATH_FLAGS = ("data",)
# `--precision`'s Keras dtype policies (`attention_zoo_apps.common.precision`)
# and `--strategy`'s (`attention_zoo_apps.common.distribute`): here, so that
# they are checked before TensorFlow is imported.
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
STRATEGIES = ("default", "mirrored", "multi-worker", "tpu")
# `--export-precision`'s: `attention_zoo.export.EXPORT_PRECISIONS`, whose
# package imports Keras.
EXPORT_PRECISIONS = ("float32", "int8")
# `--distribution`'s: `keras.distribution`'s, on JAX.
DISTRIBUTIONS = ("data-parallel",)
DISTRIBUTION_HELP = (
    "on JAX (KERAS_BACKEND=jax), data-parallel: a replica of the model on "
    "every local device (keras.distribution.DataParallel), each batch "
    "split among them (--batch-size per device). On TensorFlow use "
    "--strategy"
)
# Their help, and `--batch-size`'s, in every `train APP --help`.
PRECISION_HELP = (
    "the Keras dtype policy: float32, mixed_bfloat16 (GPUs from Ampere "
    "on, TPUs) or mixed_float16 (older GPUs; loss scaling). A resumed run "
    "keeps the precision it started with"
)
STRATEGY_HELP = (
    "default: one device; mirrored: every GPU of this machine; "
    "multi-worker: every GPU of the machines listed in the TF_CONFIG "
    "environment variable (run the same command on each, with its own "
    "TF_CONFIG task); tpu: the TPU named by TPU_NAME (default 'local'). "
    "--batch-size is per replica: the global batch is batch-size x the "
    "number of replicas"
)
BATCH_SIZE_HELP = (
    "examples per replica; a training step takes batch-size x replicas "
    "examples (see --strategy)"
)


class UsageError(ValueError):
    """A flag value, or an input a flag names, that no run can use: the
    command's `main` reports `str(error)` as its usage error (exit code
    2). A `ValueError`, so that callers without a command line catch it
    as one."""


class FlagParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors are short: a
    one-line usage hint, then `prog: error: message` (exit code 2), in
    place of the full usage of every flag (`--help` still lists them)."""

    def error(self, message):
        self.exit(
            2,
            f"usage: {self.prog} [flags]  (--help lists them)\n"
            f"{self.prog}: error: {message}\n",
        )


def check_flag_values(args, application=None):
    """A `UsageError` (one line naming the flag and its value)
    for a flag value no run can use: `POSITIVE_INT_FLAGS` below 1,
    `FRACTION_FLAGS` outside [0, 1), a learning rate that is not a
    positive number, an input (`INPUT_PATH_FLAGS`) that cannot be read,
    a `--run-dir` or `--export` that is a file or an `--export` that is
    one version (`application` names the folder to give instead). Reads
    the flags `args` has; imports nothing heavy."""
    values = vars(args)
    for name in POSITIVE_INT_FLAGS:
        value = values.get(name)
        if value is not None and value < 1:
            raise UsageError(
                f"{flag(name)} must be a positive integer, got {value}"
            )
    for name in FRACTION_FLAGS:
        value = values.get(name)
        if value is not None and not 0 <= value < 1:
            raise UsageError(
                f"{flag(name)} must be at least 0 and below 1, got {value}"
            )
    rate = values.get("learning_rate")
    if rate is not None and not 0 < rate < math.inf:
        raise UsageError(
            f"--learning-rate must be a positive number, got {rate}"
        )
    for name in INPUT_PATH_FLAGS:
        if values.get(name):
            problem = input_path_problem(values[name])
            if problem:
                raise UsageError(f"{flag(name)} {values[name]}: {problem}")
    run_dir = values.get("run_dir")
    if run_dir and os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise UsageError(f"--run-dir {run_dir}: a file, not a folder")
    check_export_path(values.get("export"), application)


def input_path_problem(path):
    """Why `path` cannot be read as an input, in a few words (a missing
    path, a broken symbolic link or a loop of them, no permission, a
    socket); None when it can be opened (a file, a folder, a FIFO)."""
    try:
        status = os.stat(path)
    except OSError as error:
        return describe_os_error(error, path)
    if stat.S_ISSOCK(status.st_mode):
        return "a socket, not a file or folder"
    wanted = os.R_OK | (os.X_OK if stat.S_ISDIR(status.st_mode) else 0)
    if not os.access(path, wanted):
        return "permission denied (cannot read it)"
    return None


def describe_os_error(error, path=None):
    """An `OSError` about a path in a few words: `no such file or folder`,
    `a broken symbolic link (to TARGET)`, `a loop of symbolic links`,
    `permission denied`, `a folder, not a file`, else its own words."""
    path = error.filename if path is None else path
    if error.errno == errno.ENOENT:
        if path is not None and os.path.islink(path):
            return f"a broken symbolic link (to {os.readlink(path)})"
        return "no such file or folder"
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links (too many levels)"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (cannot read it)"
    if error.errno == errno.EISDIR:
        return "a folder, not a file"
    if error.errno == errno.ENOTDIR:
        return "not a folder (a file is on its path)"
    return error.strerror or str(error)


def flag(dest):
    """`--dest-name`: the flag of an argparse dest."""
    return "--" + dest.replace("_", "-")


def check_export_path(export, application=None):
    """A `UsageError` when `--export` is a file or one version."""
    if not export or not os.path.exists(export):
        return
    if not os.path.isdir(export):
        raise UsageError(f"--export {export}: a file, not a folder")
    if os.path.exists(os.path.join(export, "saved_model.pb")):
        raise UsageError(
            f"--export {export} is a SavedModel: give the folder of its "
            f"versions (e.g. saved_models/{application or 'APP'}), the new "
            "version goes beside them"
        )
