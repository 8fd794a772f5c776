"""`experiments.captioning_quality` averages each model's figures over
seeds from the unrounded scores, not from the table's rounded cells."""

import numpy as np

from experiments.captioning_quality import seed_means


def _run(model, seed, bleu_4, cider, minutes):
    scores = {"bleu_4": bleu_4, "cider": cider}
    row = {"data": "shapes", "model": model, "seed": seed}
    outputs = {
        "scores": {"test": scores, "validation": dict(scores, bleu_4=1.0)},
        "minutes": minutes,
    }
    return row, outputs


def test_seed_means_average_the_unrounded_figures_per_model():
    bleu = [10.04, 10.04, 11.0]  # rounded to 10.0, 10.0, 11.0: mean 10.3
    cider = [0.1004, 0.1004, 0.2]
    runs = [_run("attention", s, bleu[s], cider[s], 1.0 + s) for s in range(3)]
    runs.append(_run("baseline", 0, 5.0, 0.05, 0.5))
    attention, baseline = seed_means(runs)
    assert attention["model"] == "attention" and attention["seeds"] == 3
    assert attention["test BLEU-4 mean (min-max)"] == (
        f"{np.mean(bleu):.1f} (10.0-11.0)"
    )
    assert attention["test BLEU-4 mean (min-max)"].startswith("10.4 ")
    assert attention["test CIDEr-D mean (min-max)"] == (
        f"{np.mean(cider):.3f} (0.100-0.200)"
    )
    assert attention["validation BLEU-4 mean (min-max)"] == "1.0 (1.0-1.0)"
    assert attention["train min (mean)"] == "2.0"
    assert baseline["seeds"] == 1
    assert baseline["test BLEU-4 mean (min-max)"] == "5.0 (5.0-5.0)"
