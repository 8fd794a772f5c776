"""`attention-zoo models`: the shipped models, with their headline metric.

    attention-zoo models
    attention-zoo models --path     # where each one is

Each line names the model (what the inference commands, `train APP
--init-from` and the bundles' `from_preset` take), its application, its
newest version, its headline test metric and the command that runs it;
the last lines say which folders they were found in
(`attention_zoo_apps.common.zoo.models_directories`), or how to get them
when none is found.
"""

import argparse
import os

from attention_zoo_apps import registry
from attention_zoo_apps.common import zoo


def _parser():
    parser = argparse.ArgumentParser(
        prog="attention-zoo models",
        description="List the trained models shipped in saved_models/ "
        "and where they were found.",
    )
    parser.add_argument(
        "--path", action="store_true", help="also print each model's folder"
    )
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    models = zoo.shipped_models()
    if not models:
        searched = ", ".join(zoo.models_directories()) or "no folder"
        print(
            f"No shipped models found (searched {searched}); {zoo.HOW_TO_GET}."
        )
        return 1
    rows = [("name", "application", "version", "test", "run it with")]
    for model in models:
        application = registry.get(model.application)
        command = (
            f"attention-zoo {application.infer_command} {model.name} ..."
            if application.reads_exports
            else "TF Serving"
        )
        version = os.path.basename(os.path.normpath(model.version))
        rows.append(
            (
                model.name,
                model.application,
                version,
                application.headline(model.metrics),
                command,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.ljust(width) for cell, width in zip(row, widths)
            ).rstrip()
        )
    if args.path:
        print()
        for model in models:
            print(f"{model.name}: {model.path}")
    folders = sorted({os.path.dirname(model.path) for model in models})
    print(f"\nFound in {', '.join(folders)}.")
    print(
        "Each model's card is its folder's README.md; "
        "`Translator.from_preset(NAME)` (and the other bundles') loads one "
        "in Python, `attention-zoo train APP --init-from NAME` fine-tunes it."
    )
    return 0
