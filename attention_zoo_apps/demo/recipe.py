"""`Recipe`: what the demo does with an application: the training settings,
the held-out metric it reports, the example it serves and the pictures it
keeps. Each application's `demo.py` defines its `RECIPE`
(`Application.demo_recipe()`).

A `Recipe` runs `attention-zoo train APP` on the application's generated
data with settings small enough that all of them together finish in a few
minutes on 2 cores (`settings`; `quick_settings` are smaller still, for
tests: they train but learn little). After training, `example(settings)`
gives the inputs of one example in the export's signature, `describe`
turns the export's outputs into one line, and `gather_pictures` copies the
run's attention pictures (`run_pictures`) into the demo's picture folder
and draws the ones `pictures` makes.
"""

import dataclasses
import os
import shutil
from typing import Callable

SEED = 0  # the trainers' default --seed, which the examples follow


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One application in the demo (which trains it with its
    `Application.train_module`).

    Attributes:
        settings: dict of trainer flag (without `--`) -> value.
        quick_settings: dict, the same for `--quick`.
        metrics: tuple of `(label, key, format)`: the held-out metrics
            shown, read from the export's `metadata.json`.
        example: callable, settings -> the signature's inputs (one example,
            as `fresh_process.serve_in_fresh_process` takes them).
        describe: callable, `(example, outputs)` -> a one-line str.
        run_pictures: tuple of the file names, in the training run's
            folder, of the pictures the demo keeps. Defaults to `()`.
        pictures: optional callable `(run_dir, settings, outputs, folder)`
            -> list of the files it wrote into `folder`. Defaults to None.
        shipped: optional callable `(model, examples, folder)` -> `(output
            lines, pictures written)`: runs a shipped model of the
            application (an `attention_zoo_apps.common.zoo.ShippedModel`) on its
            card's example inputs, for the demo's opening
            (`attention_zoo_apps.demo.shipped`). Defaults to None.
    """

    settings: dict
    quick_settings: dict
    metrics: tuple
    example: Callable
    describe: Callable
    run_pictures: tuple = ()
    pictures: Callable = None
    shipped: Callable = None

    def describe_metrics(self, metrics):
        """`"BLEU 41.2"`: the metrics of a `metadata.json`, "n/a" where
        one is missing (e.g. AUROC on a test split of one class)."""
        shown = []
        for label, key, form in self.metrics:
            value = (metrics or {}).get(key)
            value = "n/a" if value is None else form.format(value)
            shown.append(f"{label} {value}")
        return ", ".join(shown)

    def gather_pictures(self, name, run_dir, settings, outputs, folder):
        """The run's `run_pictures` copied to `folder` as `NAME-file`,
        then what `pictures` draws there; the list of files written."""
        written = copy_pictures(run_dir, self.run_pictures, folder, name)
        if self.pictures is not None:
            written += self.pictures(run_dir, settings, outputs, folder)
        return written

    def flags(self, quick=False):
        """The trainer's command-line flags for these settings."""
        settings = self.quick_settings if quick else self.settings
        flags = []
        for name, value in settings.items():
            flags += [f"--{name}", str(value)]
        return flags


def copy_pictures(run_dir, names, folder, prefix):
    """Copies `run_dir/name` to `folder/prefix-name` for each name."""
    written = []
    for name in names:
        source = os.path.join(run_dir, name)
        if os.path.exists(source):
            target = os.path.join(folder, f"{prefix}-{name}")
            shutil.copyfile(source, target)
            written.append(target)
    return written
