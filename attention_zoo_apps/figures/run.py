"""`attention-zoo figures`: the textbook's attention figures, remade.

    attention-zoo figures --out DIR            # all of them, about a minute
    attention-zoo figures --only 15.15 heads   # a few

Each figure of the chapter (15.15 to 15.22; 15.18 is a diagram of a
model, not a result) and the lecture notes' multi-head pictures is drawn
with this library and the shipped models (`saved_models/`, by name) as
`DIR/<name>-....png`, with a caption that says what it shows and where it
differs from the book; `DIR/index.md` gathers them (a markdown gallery).
A figure that fails is reported in one line and the others are still
made; the exit code is then 1.
"""

import os
import time
import traceback

from attention_zoo_apps.figures import convolution
from attention_zoo_apps.figures import heads
from attention_zoo_apps.figures import mechanics
from attention_zoo_apps.figures import records
from attention_zoo_apps.figures import regression
from attention_zoo_apps.figures import shipped
from attention_zoo_apps.figures.flags import FIGURES
from attention_zoo_apps.figures.flags import parse
from attention_zoo_apps.figures.gallery import INDEX
from attention_zoo_apps.figures.gallery import write_index

# Name (`flags.FIGURES`) -> `make(out) -> gallery.Figure`.
MAKERS = {
    "15.15": convolution.receptive_field,
    "15.16": mechanics.weighted_average,
    "15.17": regression.kernel_regression,
    "15.19": shipped.translation_heatmaps,
    "15.20": records.health_record,
    "15.21": shipped.entailment_alignment,
    "15.22": shipped.soft_and_hard,
    "heads": heads.heads,
    "positions": mechanics.positions,
}


def make_figures(out, names=FIGURES):
    """Makes the figures `names` in `out` and writes `out/index.md`.

    Returns:
        `(figures, failures)`: the `gallery.Figure`s made, and
        `(name, message)` for each that failed.
    """
    os.makedirs(out, exist_ok=True)
    figures, failures = [], []
    start = time.perf_counter()
    for step, name in enumerate(names, 1):
        began = time.perf_counter()
        try:
            figure = MAKERS[name](out)
        except Exception as error:  # noqa: BLE001 (report, go on)
            traceback.print_exc()
            message = f"{type(error).__name__}: {error}"
            failures.append((name, message))
            print(f"[{step}/{len(names)}] {name} FAILED: {message}", flush=True)
            continue
        figures.append(figure)
        print(
            f"[{step}/{len(names)}] {name} {figure.title}: "
            f"{', '.join(os.path.relpath(i, out) for i in figure.images)} "
            f"({time.perf_counter() - began:.1f} s, "
            f"{time.perf_counter() - start:.1f} s in all)",
            flush=True,
        )
    write_index(out, figures, failures)
    return figures, failures


def main(argv=None):
    args = parse(argv)
    _, failures = make_figures(args.out, args.only or FIGURES)
    print(f"wrote {os.path.join(args.out, INDEX)}")
    return 1 if failures else 0
