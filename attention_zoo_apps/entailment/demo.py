"""Entailment in `attention-zoo demo`: generated premise / hypothesis
pairs."""

import os

from attention_zoo_apps.common.plots import plot_heatmap
from attention_zoo_apps.demo.recipe import SEED
from attention_zoo_apps.demo.recipe import Recipe
from attention_zoo_apps.demo.shipped import run_command
from attention_zoo_apps.entailment import infer
from attention_zoo_apps.entailment import synthetic
from attention_zoo_apps.entailment.classifier import EntailmentClassifier
from attention_zoo_apps.entailment.examples import LABELS


def _example(settings):
    (examples,) = synthetic.fit_arguments(1, seed=SEED + 1)
    return {
        "premise": [examples.premises[0]],
        "hypothesis": [examples.hypotheses[0]],
    }


def _describe(example, outputs):
    """`entailment (entailment 0.611, neutral 0.314, contradiction
    0.075)`: the label, then each class's probability by name."""
    shares = ", ".join(
        f"{name} {p:.3f}"
        for name, p in zip(LABELS, outputs["probabilities"][0])
    )
    return f"{outputs['label'][0]} ({shares})"


def _shipped(model, examples, pictures):
    """The shipped model on its card's examples (`Recipe.shipped`)."""
    argv = [model.name]
    for example in examples:
        argv += ["--premise", example["premise"]]
        argv += ["--hypothesis", example["hypothesis"]]
    output = run_command(infer.main, argv)
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


RECIPE = Recipe(
    shipped=_shipped,
    settings={"synthetic-examples": 8000, "epochs": 15},
    quick_settings={
        "synthetic-examples": 300,
        "epochs": 1,
        "embedding-dim": 12,
        "hidden-units": 12,
        "vocabulary-size": 200,
    },
    metrics=(("accuracy", "accuracy", "{:.1%}"),),
    example=_example,
    describe=_describe,
    run_pictures=("alignment.png",),
)
