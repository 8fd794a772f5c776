"""Model-quality experiments: each trains models and measures what they
learn (accuracy, BLEU, AUROC, faithfulness), not how fast they run.

Run from the repository root as `python -m experiments.NAME`; the results
are recorded in the site's model-quality pages (`docs/quality/`): an
experiment that takes `--out DIR` writes them to `DIR/NAME.json`, and
`python -m experiments.pages` makes the pages' tables from those. Speed
benchmarks are in `benchmarks/`, the release tool that builds the shipped
models in `release/`.
"""

import os

# The real data sets: `../shared/data` beside the repository.
SHARED_DATA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "..",
    "shared",
    "data",
)
