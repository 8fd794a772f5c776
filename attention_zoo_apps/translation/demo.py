"""Translation in `attention-zoo demo`: the generated language pair (word
reordering, known alignment)."""

import os

from attention_zoo_apps.demo.recipe import SEED
from attention_zoo_apps.demo.recipe import Recipe
from attention_zoo_apps.demo.shipped import run_command
from attention_zoo_apps.translation import infer
from attention_zoo_apps.translation import synthetic
from attention_zoo_apps.translation.evaluate import plot_attention
from attention_zoo_apps.translation.translator import Translator


def _example(settings):
    (pairs,) = synthetic.fit_arguments(1, seed=SEED + 1)
    return {"text": [pairs[0][0]]}


def _describe(example, outputs):
    return f"{example['text'][0]} -> {outputs['translation'][0] or '(empty)'}"


def _shipped(model, examples, pictures):
    """The shipped model on its card's examples (`Recipe.shipped`)."""
    texts = [example["text"] for example in examples]
    output = run_command(infer.main, [model.name, *texts])
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


RECIPE = Recipe(
    shipped=_shipped,
    settings={"synthetic-pairs": 4000, "epochs": 5},
    quick_settings={
        "synthetic-pairs": 300,
        "epochs": 1,
        "units": 16,
        "embedding-dim": 16,
        "vocabulary-size": 120,
        "max-length": 12,
    },
    metrics=(("BLEU", "bleu", "{:.1f}"),),
    example=_example,
    describe=_describe,
    run_pictures=("attention.png",),
)
