"""The demo's opening: every shipped model (`applications.zoo`) on its
card's examples, before anything trains.

Each model runs through the command a user would type (its application's
`Recipe.shipped`, in the application's `demo.py`), by name
(`attention-zoo translate translation-spa-eng "..."`, `predict ...`,
`caption ... --plot`), on the inputs its `card.json` lists (the
image is `applications/demo/examples/chelsea.png`, CC0); the pictures go
to the demo's picture folder. The translators' and the entailment
model's pictures come from their bundles (`from_preset(name)`), which name
the subword tokens on the axes (the exports return the weights only). A
model that fails is reported and the demo goes on.
"""

import contextlib
import io
import json
import os
import time
import traceback

from applications import registry
from applications import zoo

EXAMPLES_DIR = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "examples"
)
CARD_JSON = "card.json"


def card_examples(model):
    """The example inputs of a shipped model's `card.json` ([] without
    one)."""
    path = os.path.join(model.path, CARD_JSON)
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return [example["inputs"] for example in json.load(f)["examples"]]


def run_command(main, argv):
    """`main(argv)`'s printed lines (the command's own output), echoed."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(argv)
    text = buffer.getvalue()
    print(text, end="")
    if code:
        raise RuntimeError(f"exited with code {code}")
    return [line for line in text.splitlines() if not line.startswith("wrote ")]


def show_shipped_models(pictures):
    """Runs every shipped model on its card's examples; returns one summary
    row per model (`name`, `application`, `headline`, `seconds`, `output`,
    `pictures`, and `failed` when it failed)."""
    os.makedirs(pictures, exist_ok=True)
    rows = []
    for model in zoo.shipped_models():
        runner = registry.get(model.application).demo_recipe().shipped
        examples = card_examples(model)
        if runner is None or not examples:
            continue
        print(f"\n--- {model.name} ({model.headline()}) ---", flush=True)
        start = time.perf_counter()
        row = {
            "name": model.name,
            "application": model.application,
            "headline": model.headline(),
        }
        try:
            output, written = runner(model, examples, pictures)
            first = output[0].replace("\t", " | ") if output else ""
            row.update(output=first, pictures=written)
        except Exception as error:  # noqa: BLE001 (report, go on)
            traceback.print_exc()
            row.update(
                output=f"{type(error).__name__}: {error}",
                pictures=[],
                failed=True,
            )
        row["seconds"] = time.perf_counter() - start
        rows.append(row)
    return rows
