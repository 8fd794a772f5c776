"""The steps of the commands that run an export, after their flags are
read: `load_export`, which checks that the folder holds the command's
application's export before anything is fed to it, and what the commands
read of an export's outputs and model card.

Every problem with the folder ends the command with one line naming the
folder and what to do, and exit code 2: the checks raise `UsageError`,
which `infer_flags.refusals` around a command's `main` reports:

- no such folder, a file, a folder without a SavedModel or an unreadable
  SavedModel;
- another application's export (its `metadata.json` says which), named
  with the command that runs it (`attention_zoo_apps.registry`);
- an export whose `serving_default` takes other inputs than the
  application's (`Application.export_inputs`), e.g. one without
  `metadata.json`: the inputs it takes are named, and the application
  whose inputs they are.

An input the export cut (its `truncated` output, past the model card's
`input_limits`) is said on stderr in one line
(`infer_flags.warn_truncated`): the command still answers, as the export
does. This module imports TensorFlow; the commands' parsers
(`infer_flags` and each application's `flags`) import none, and
`attention-zoo INFER_COMMAND` reads its flags before this module is
imported (`attention_zoo_apps.cli`).
"""

import os

import numpy as np
import tensorflow as tf

from attention_zoo.export import load_signatures
from attention_zoo.export import read_metadata
from attention_zoo.export import resolve_version
from attention_zoo_apps import registry
from attention_zoo_apps.commands.infer_flags import SEEDED_SIGNATURE
from attention_zoo_apps.commands.infer_flags import SIGNATURE
from attention_zoo_apps.common import startup
from attention_zoo_apps.common import zoo
from attention_zoo_apps.common.flag_checks import UsageError


def truncated_rows(outputs):
    """The rows an export's outputs say were cut (its bool `truncated`
    output); none for an export without it (written before it had
    one)."""
    truncated = outputs.get("truncated")
    if truncated is None:
        return []
    return np.flatnonzero(np.asarray(truncated)).tolist()


def input_limits(directory):
    """The `input_limits` of the export `directory` names (see
    `export_version`): input -> the length past which it is cut; `{}`
    where its `metadata.json` has none or cannot be read."""
    try:
        metadata = read_metadata(export_version(directory))
    except (OSError, ValueError):
        return {}
    limits = (
        metadata.get("input_limits") if isinstance(metadata, dict) else None
    )
    return limits if isinstance(limits, dict) else {}


def export_version(directory):
    """The version folder to load in `directory`: the folder itself when
    it holds `saved_model.pb`, else its newest numbered version (see
    `attention_zoo.export.resolve_version`); a name that is not a path is
    a shipped model's (`attention_zoo_apps.common.zoo`). A `UsageError` when
    there is none."""
    if not os.path.exists(directory):
        shipped = zoo.find(directory)
        if shipped is None:
            names = ", ".join(m.name for m in zoo.shipped_models()) or "none"
            raise UsageError(
                f"{directory} does not exist: expected an export folder or "
                f"a shipped model's name ({names})",
            )
        directory = shipped.path
    if not os.path.isdir(directory):
        raise UsageError(f"{directory} is a file, not an export folder")

    try:
        path = resolve_version(directory)
    except FileNotFoundError as error:
        raise UsageError(str(error))
    if not os.path.isfile(os.path.join(path, "saved_model.pb")):
        raise UsageError(
            f"No SavedModel in {path!r} (no saved_model.pb): an unfinished "
            "export or not an export",
        )
    return path


def load_export(directory, application, seed=None):
    """The `serving_default` signature of `application`'s export in
    `directory` (an export folder or a version folder), or with `seed`
    its `seeded` signature, given the seeds `seed + i`.

    The export's `metadata.json` is read first: another application's
    export is refused before TensorFlow loads it. Then the signature's
    inputs must be the application's `export_inputs`, whether or not the
    metadata could be read; with `seed` the export must sample (have a
    `seeded` signature). Every refusal is a `UsageError`.

    Args:
        directory: str, the folder given on the command line.
        application: str, the command's application (`Application.name`).
        seed: optional int, the first input's seed (`--seed`).

    Returns:
        The loaded signature, a callable taking the inputs as keyword
        arguments (with `seed`, the seeds are added); TensorFlow's noise
        on its first run (see `attention_zoo_apps.common.startup`) is dropped.
    """
    path = export_version(directory)
    exported = zoo.exported_application(path)
    if exported is not None and exported != application:
        raise UsageError(_other_export(path, directory, exported, application))
    signatures = _load_signatures(path)
    signature = signatures[SIGNATURE]
    specs = signature.structured_input_signature[1]
    expected = registry.get(application).export_inputs
    if set(specs) != set(expected):
        raise UsageError(_other_inputs(path, directory, specs, application))
    if seed is None:
        return startup.quietly(signature)
    if SEEDED_SIGNATURE not in signatures:
        raise UsageError(
            f"--seed: the export in {path} does not sample (it has no "
            f"{SEEDED_SIGNATURE} signature); export with sampling=... to "
            "draw samples",
        )
    return startup.quietly(_with_seeds(signatures[SEEDED_SIGNATURE], seed))


def _with_seeds(signature, seed):
    """`signature` (`seeded`) called with the seeds `seed + i`."""

    def run(**inputs):
        count = len(next(iter(inputs.values())))
        seeds = np.arange(count, dtype="int64") + seed
        return signature(**inputs, seed=tf.constant(seeds))

    return run


def _load_signatures(path):
    """The signatures of the SavedModel in `path` (with `serving_default`),
    or a `UsageError` naming the first line of TensorFlow's complaint."""

    try:
        signatures = load_signatures(path)
    except (OSError, ValueError, tf.errors.OpError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UsageError(f"cannot load the SavedModel in {path}: {reason}")
    if SIGNATURE not in signatures:
        raise UsageError(
            f"the SavedModel in {path} has no {SIGNATURE} signature"
        )
    return signatures


def _other_export(path, directory, exported, application):
    """Why `path`, an export of `exported`, is not served as
    `application`'s, and what runs it."""
    message = f"{path} is an export of {exported}, not of {application}"
    if exported not in registry.APPLICATIONS:
        return message
    return f"{message}: {_how_to_run(exported, directory)}"


def _other_inputs(path, directory, specs, application):
    """Why the export in `path`, whose signature takes `specs` (name ->
    `tf.TensorSpec`), is not served as `application`'s."""
    takes = ", ".join(
        f"{name} ({spec.dtype.name} {spec.shape.as_list()})"
        for name, spec in sorted(specs.items())
    )
    expected = ", ".join(registry.get(application).export_inputs)
    if zoo.exported_application(path) is not None:
        return (
            f"{path}'s {SIGNATURE} takes {takes}, not {expected} as "
            f"{application} exports do"
        )
    message = (
        f"{path} has no readable metadata.json and its {SIGNATURE} takes "
        f"{takes}, not {expected}"
    )
    owner = _application_taking(set(specs))
    if owner is None:
        return message
    article = "an" if owner[0] in "aeiou" else "a"
    how = _how_to_run(owner, directory)
    return f"{message}: it looks like {article} {owner} export: {how}"


def _how_to_run(exported, directory):
    """What runs an export of `exported` found in `directory`."""
    described = registry.get(exported)
    if not described.reads_exports:
        return (
            f"no attention-zoo command runs {exported} exports (serve it "
            f"with TF Serving; `attention-zoo {described.infer_command}` "
            f"reads a `train {exported}` run folder)"
        )
    return (
        f"run it with `attention-zoo {described.infer_command} {directory} ...`"
    )


def _application_taking(names):
    """The application whose export takes the inputs `names`, or None."""
    for application in registry.all_applications():
        if set(application.export_inputs) == names:
            return application.name
    return None
