"""Translation in `attention-zoo demo`: the generated language pair (word
reordering, known alignment)."""

from applications.demo.recipe import SEED
from applications.demo.recipe import Recipe


def _example(settings):
    from applications.translation import synthetic

    (pairs,) = synthetic.fit_arguments(1, seed=SEED + 1)
    return {"text": [pairs[0][0]]}


def _describe(example, outputs):
    return f"{example['text'][0]} -> {outputs['translation'][0] or '(empty)'}"


RECIPE = Recipe(
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
