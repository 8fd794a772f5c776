"""The demo's opening: every shipped model (`attention_zoo_apps.common.zoo`) on
a few
example inputs, before anything trains.

Each model runs through the command a user would type (its application's
`Recipe.shipped`, in the application's `demo.py`), by name
(`attention-zoo translate translation-spa-eng "..."`, `predict ...`,
`caption ... --plot`), on the inputs its `card.json` lists, or on those of
`DEMO_EXAMPLES`, each with a line that says what it is: the captioner first
captions an ordinary photo of the kind it was trained on
(`examples/riders-on-beach.jpg`, CC BY 2.0), then its card's cat
(`examples/chelsea.png`, CC0), which it gets wrong. The outputs are
examples of what the models usually answer, not chosen successes (the demo
says so). The pictures go to the demo's picture folder. The translators'
and the entailment model's pictures come from their bundles
(`from_preset(name)`), which name the subword tokens on the axes (the
exports return the weights only). The summary row's `output` is the
model's answer to the first example (the last field of the command's
line: a caption, never the image's path). A model that fails is reported
and the demo goes on.
"""

import contextlib
import io
import json
import os
import sys
import time
import traceback

from attention_zoo_apps import registry
from attention_zoo_apps.common import zoo

EXAMPLES_DIR = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "examples"
)
CARD_JSON = "card.json"
SAID_FIRST = (
    "The shipped models on example inputs: what they usually answer, not "
    "chosen successes (each one's test figure is beside its name)."
)
# Inputs shown in place of a shipped model's card examples, each with the
# line printed before the answers: an ordinary input of the model's kind
# first, so that the first output is a typical one.
DEMO_EXAMPLES = {
    "captioning-flickr8k": (
        (
            {"image": "riders-on-beach.jpg"},
            "a photo like Flickr8k's (people, dogs, outdoor scenes); COCO "
            'describes it as "Two equestrians riding their horses on the '
            'beach together."',
        ),
        (
            {"image": "chelsea.png"},
            "a cat indoors, unlike Flickr8k's photos (mostly people and "
            "dogs): expect a wrong caption, of the scenes it saw most",
        ),
    ),
}


def card_examples(model):
    """The example inputs of a shipped model's `card.json` ([] without
    one)."""
    path = os.path.join(model.path, CARD_JSON)
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return [example["inputs"] for example in json.load(f)["examples"]]


def demo_examples(model):
    """`(inputs, notes)`: the example inputs the demo runs a shipped model
    on (`DEMO_EXAMPLES`, else its card's) and a line about each ("" for a
    card's)."""
    chosen = DEMO_EXAMPLES.get(model.name)
    if chosen is None:
        examples = card_examples(model)
        return examples, [""] * len(examples)
    return [inputs for inputs, _ in chosen], [note for _, note in chosen]


def answer(line):
    """The model's answer in a inference command's line, its last field
    (`path<TAB>caption` -> the caption)."""
    return line.rsplit("\t", 1)[-1].strip()


def _name(inputs):
    """A short name of one example's inputs: an image's file name, else
    its first text."""
    if "image" in inputs:
        return os.path.basename(inputs["image"])
    text = str(next(iter(inputs.values()), ""))
    return text if len(text) <= 40 else text[:37] + "..."


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
    """Runs every shipped model on its examples (`demo_examples`); returns
    one summary row per model (`name`, `application`, `headline`,
    `seconds`, `output`, `pictures`, and `failed` when it failed)."""
    os.makedirs(pictures, exist_ok=True)
    print(SAID_FIRST)
    rows = []
    for model in zoo.shipped_models():
        application = registry.get(model.application)
        runner = application.demo_recipe().shipped
        headline = application.headline(model.metrics)
        examples, notes = demo_examples(model)
        if runner is None or not examples:
            continue
        print(f"\n--- {model.name} ({headline}) ---")
        for inputs, note in zip(examples, notes):
            if note:
                print(f"  {_name(inputs)}: {note}")
        sys.stdout.flush()
        start = time.perf_counter()
        row = {
            "name": model.name,
            "application": model.application,
            "headline": headline,
        }
        try:
            output, written = runner(model, examples, pictures)
            first = answer(output[0]) if output else ""
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
