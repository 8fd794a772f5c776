"""A model card's ablation table, read from the committed result files of
`experiments.translation_recipe` (`docs/quality/results/RUN/`), so the
card quotes the figures the quality pages show, not a copy typed in."""

import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "quality", "results")
RESULT_FILE = "translation_recipe.json"


def ablation_rows(runs, results=RESULTS):
    """The rows of `runs` (folder names under `results`), in order: one
    dict per trained variant, as the experiment wrote it. A
    `FileNotFoundError` names a run whose result file is missing."""
    rows = []
    for run in runs:
        path = os.path.join(results, run, RESULT_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} does not exist: the card's ablation names run "
                f"{run!r} (python -m experiments.translation_recipe ... "
                f"--out docs/quality/results/{run})"
            )
        with open(path) as f:
            document = json.load(f)
        rows += [row for row in document["result"] if "val BLEU" in row]
    return rows


def ablation_lines(runs, results=RESULTS):
    """The Markdown table of `runs`: each variant, what it adds, its
    epochs and minutes, and its validation cased BLEU and chrF."""
    lines = [
        "| variant | adds | epochs | train min | validation BLEU | "
        "validation chrF |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in ablation_rows(runs, results):
        lines.append(
            f"| {row['variant']} | {row.get('adds') or '-'} | "
            f"{row['epochs']} | {row['train min']:.1f} | "
            f"{row['val BLEU']:.2f} | {row['val chrF']:.2f} |"
        )
    return lines
