"""The demo's opening: every shipped model (`applications.zoo`) on its
card's examples, before anything trains.

Each model runs through the command a user would type, by name
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


def _translation(model, examples, pictures):
    from applications.translation import serve
    from applications.translation.evaluate import plot_attention
    from applications.translation.translator import Translator

    texts = [example["text"] for example in examples]
    output = _run(serve.main, [model.name, *texts])
    translator = Translator.from_preset(model.name)
    explained = translator.explain(texts[0])
    path = plot_attention(
        explained["source_tokens"],
        explained["target_tokens"],
        explained["attention"],
        os.path.join(pictures, f"{model.name}.png"),
        title=f"{texts[0]} -> {explained['translation']}",
    )
    return output, [path]


def _entailment(model, examples, pictures):
    from applications.common.plots import plot_heatmap
    from applications.entailment import serve
    from applications.entailment.classifier import EntailmentClassifier

    argv = [model.name]
    for example in examples:
        argv += ["--premise", example["premise"]]
        argv += ["--hypothesis", example["hypothesis"]]
    output = _run(serve.main, argv)
    first = examples[0]
    classifier = EntailmentClassifier.from_preset(model.name)
    result = classifier.predict([first["premise"]], [first["hypothesis"]])
    path = plot_heatmap(
        result["hypothesis_tokens"][0],
        result["premise_tokens"][0],
        result["alignment"][0],
        os.path.join(pictures, f"{model.name}.png"),
        title=f"{first['premise']} / {first['hypothesis']}: "
        f"{result['labels'][0]}",
        x_label="hypothesis token",
        y_label="premise token",
    )
    return output, [path]


def _captioning(model, examples, pictures):
    from applications.captioning import serve

    images = [os.path.join(EXAMPLES_DIR, e["image"]) for e in examples]
    path = os.path.join(pictures, f"{model.name}.png")
    output = _run(serve.main, [model.name, *images, "--plot", path])
    written = serve.plot_paths(path, len(images))
    return output, written


RUNNERS = {
    "translation": _translation,
    "entailment": _entailment,
    "captioning": _captioning,
}


def _run(main, argv):
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
        runner = RUNNERS.get(model.application)
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
