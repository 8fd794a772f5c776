"""Writing an application's export, the same for every application.

`save_export` writes a serving module as a SavedModel into a version folder,
atomically, together with the bundle's config and vocabularies (the files
`SavedBundle.save_assets` writes) and `metadata.json` (see
`attention_zoo.export.metadata`). `add_jit_compile_flag` gives each
`attention-zoo train APP` its `--jit-compile on|off|auto` flag, and
`export_next_version` does what their `--export DIR` does.
"""

import json
import os

from attention_zoo.export import atomic_directory
from attention_zoo.export import data_fingerprint
from attention_zoo.export import next_version
from attention_zoo.export import write_metadata

# `--jit-compile` values -> the `jit_compile` argument of `export`.
JIT_COMPILE_CHOICES = {"on": True, "off": False, "auto": None}


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


def save_export(
    bundle, module, path, jit_compile, metrics=None, data_fingerprint=None
):
    """Writes `module` with the bundle's assets and metadata to `path`.

    The `serving_default` signature is `module.serve`. Beside the
    SavedModel the folder holds the bundle's `config.json`, its
    vocabularies (and, for `RiskModel`, its code list and value scaler)
    and `metadata.json`; all of it appears at once (`atomic_directory`),
    and an existing `path` is replaced.

    Args:
        bundle: a `SavedBundle` (`Translator`, `EntailmentClassifier`,
            `Captioner` or `RiskModel`).
        module: the `tf.Module` to save, with a `serve` `tf.function`.
        path: str, the version folder.
        jit_compile: bool, whether `module`'s functions are XLA-compiled
            (recorded in the metadata).
        metrics: optional dict of evaluation results for the metadata.
        data_fingerprint: optional str identifying the training data (see
            `attention_zoo.export.data_fingerprint`).

    Returns:
        `path`.
    """
    import tensorflow as tf

    name = os.path.basename(os.path.normpath(path))
    with atomic_directory(path) as temporary:
        tf.saved_model.save(
            module, temporary, signatures={"serving_default": module.serve}
        )
        bundle.save_assets(temporary)
        write_metadata(
            temporary,
            application=bundle.application,
            config=json.loads(bundle.config.to_json()),
            jit_compile=jit_compile,
            vocabulary_files=bundle.vocabulary_files(),
            input_limits=bundle.input_limits(),
            metrics=metrics,
            data_fingerprint=data_fingerprint,
            version=int(name) if name.isdigit() else None,
        )
    return path
