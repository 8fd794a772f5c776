"""Entailment in `attention-zoo demo`: generated premise / hypothesis
pairs."""

from applications.demo.recipe import SEED
from applications.demo.recipe import Recipe


def _example(settings):
    from applications.entailment import synthetic

    (examples,) = synthetic.fit_arguments(1, seed=SEED + 1)
    return {
        "premise": [examples.premises[0]],
        "hypothesis": [examples.hypotheses[0]],
    }


def _describe(example, outputs):
    probability = max(outputs["probabilities"][0])
    return f"{outputs['label'][0]} (p={probability:.2f})"


RECIPE = Recipe(
    settings={"synthetic-examples": 8000, "epochs": 10},
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
