"""What the demo does with each application: the training settings, the
held-out metric it reports, the example it serves and the pictures it keeps.

Each `Recipe` runs `attention-zoo train APP` on the application's generated
data with settings small enough that the four together finish in a few
minutes on 2 cores (`settings`; `quick_settings` are smaller still, for
tests: they train but learn little). After training, `example(settings)`
gives the inputs of one example in the export's signature, `describe`
turns the export's outputs into one line, and `pictures` copies (or draws)
the attention pictures into the demo's picture folder.
"""

import base64
import dataclasses
import os
import shutil
from typing import Callable

SEED = 0  # the trainers' default --seed, which the examples follow


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One application in the demo.

    Attributes:
        name: str, the application (`attention-zoo train NAME`).
        trainer: str, the module with the trainer's `main(argv)`.
        settings: dict of trainer flag (without `--`) -> value.
        quick_settings: dict, the same for `--quick`.
        metrics: tuple of `(label, key, format)`: the held-out metrics
            shown, read from the export's `metadata.json`.
        example: callable, settings -> the signature's inputs (one example,
            as `fresh_process.serve_in_fresh_process` takes them).
        describe: callable, `(example, outputs)` -> a one-line str.
        pictures: callable `(run_dir, settings, outputs, folder)` -> list
            of the files it wrote into `folder`.
    """

    name: str
    trainer: str
    settings: dict
    quick_settings: dict
    metrics: tuple
    example: Callable
    describe: Callable
    pictures: Callable

    def describe_metrics(self, metrics):
        """`"BLEU 41.2"`: the metrics of a `metadata.json`, "n/a" where
        one is missing (e.g. AUROC on a test split of one class)."""
        shown = []
        for label, key, form in self.metrics:
            value = (metrics or {}).get(key)
            value = "n/a" if value is None else form.format(value)
            shown.append(f"{label} {value}")
        return ", ".join(shown)

    def flags(self, quick=False):
        """The trainer's command-line flags for these settings."""
        settings = self.quick_settings if quick else self.settings
        flags = []
        for name, value in settings.items():
            flags += [f"--{name}", str(value)]
        return flags


def _copy(run_dir, names, folder, prefix):
    """Copies `run_dir/name` to `folder/prefix-name` for each name."""
    written = []
    for name in names:
        source = os.path.join(run_dir, name)
        if os.path.exists(source):
            target = os.path.join(folder, f"{prefix}-{name}")
            shutil.copyfile(source, target)
            written.append(target)
    return written


# Translation: the generated language pair (word reordering, known
# alignment).


def _translation_example(settings):
    from applications.translation import data

    pairs = data.make_synthetic_pairs(1, seed=SEED + 1).pairs
    return {"text": [pairs[0][0]]}


def _translation_describe(example, outputs):
    return f"{example['text'][0]} -> {outputs['translation'][0] or '(empty)'}"


def _translation_pictures(run_dir, settings, outputs, folder):
    return _copy(run_dir, ["attention.png"], folder, "translation")


TRANSLATION = Recipe(
    name="translation",
    trainer="applications.translation.train",
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
    example=_translation_example,
    describe=_translation_describe,
    pictures=_translation_pictures,
)


# Entailment: generated premise / hypothesis pairs.


def _entailment_example(settings):
    from applications.entailment import data

    examples = data.make_synthetic_entailment(1, seed=SEED + 1).examples
    return {
        "premise": [examples.premises[0]],
        "hypothesis": [examples.hypotheses[0]],
    }


def _entailment_describe(example, outputs):
    probability = max(outputs["probabilities"][0])
    return f"{outputs['label'][0]} (p={probability:.2f})"


def _entailment_pictures(run_dir, settings, outputs, folder):
    return _copy(run_dir, ["alignment.png"], folder, "entailment")


ENTAILMENT = Recipe(
    name="entailment",
    trainer="applications.entailment.train",
    settings={"synthetic-examples": 8000, "epochs": 10},
    quick_settings={
        "synthetic-examples": 300,
        "epochs": 1,
        "embedding-dim": 12,
        "hidden-units": 12,
        "vocabulary-size": 200,
    },
    metrics=(("accuracy", "accuracy", "{:.1%}"),),
    example=_entailment_example,
    describe=_entailment_describe,
    pictures=_entailment_pictures,
)


# Captioning: generated images of two coloured shapes.


def _captioning_image(settings):
    """A generated test image as `(pixels in [0, 1], PNG bytes)`."""
    import numpy as np

    from applications.captioning.shapes import make_synthetic_shapes
    from applications.captioning.train import SYNTHETIC_DEFAULTS

    size = settings.get("image-size", SYNTHETIC_DEFAULTS["image_size"])
    image = make_synthetic_shapes(1, size, seed=SEED + 1).images[0]
    pixels = np.clip(np.round(image * 255), 0, 255).astype("uint8")
    return image, _encode_png(pixels)


def _encode_png(pixels):
    import tensorflow as tf

    return tf.io.encode_png(pixels).numpy()


def _captioning_example(settings):
    _, png = _captioning_image(settings)
    return {"image": [{"b64": base64.b64encode(png).decode("ascii")}]}


def _captioning_describe(example, outputs):
    return outputs["caption"][0] or "(empty)"


def _captioning_pictures(run_dir, settings, outputs, folder):
    from applications.captioning.overlays import plot_caption_attention
    from applications.captioning.overlays import word_heatmaps

    written = _copy(run_dir, ["attention.png"], folder, "captioning")
    # The reloaded export's own attention, over the image it was sent.
    image, _ = _captioning_image(settings)
    words, heatmaps = word_heatmaps(
        outputs["tokens"][0], outputs["attention"][0]
    )
    path = os.path.join(folder, "captioning-export.png")
    plot_caption_attention(
        image, words, heatmaps, path, title=outputs["caption"][0]
    )
    return written + [path]


CAPTIONING = Recipe(
    name="captioning",
    trainer="applications.captioning.train",
    settings={"synthetic-images": 3000, "epochs": 12},
    quick_settings={
        "synthetic-images": 80,
        "epochs": 1,
        "embedding-dim": 8,
        "units": 16,
        "vocabulary-size": 60,
        "beam-size": 1,
    },
    metrics=(
        ("BLEU-4", "bleu_4", "{:.1f}"),
        ("exact", "exact_match", "{:.0%}"),
    ),
    example=_captioning_example,
    describe=_captioning_describe,
    pictures=_captioning_pictures,
)


# EHR: synthetic patients whose risk comes from planted codes and phrases.


def _ehr_patient(settings):
    """The record of the first planted positive of the test split (the
    first test patient when there is none), as `train ehr` splits them."""
    from applications.ehr.data import split_patients
    from applications.ehr.synthetic import make_synthetic_patients

    synthetic = make_synthetic_patients(
        settings["synthetic-patients"], seed=SEED
    )
    _, _, test = split_patients(synthetic.records, seed=SEED)
    index = {p: i for i, p in enumerate(synthetic.records.patient_ids)}
    chosen = 0
    for i, patient in enumerate(test.patient_ids):
        if test.labels[i] and synthetic.planted_events[index[patient]]:
            chosen = i
            break
    return test.select([chosen])


def _ehr_example(settings):
    record = _ehr_patient(settings)
    return {
        "codes": [list(record.codes[0])],
        "values": [record.values[0].tolist()],
        "times": [record.times[0].tolist()],
        "prediction_time": [float(record.prediction_times[0])],
        "note": [record.notes[0]],
    }


def _ehr_describe(example, outputs):
    return f"risk {outputs['risk'][0]:.3f}"


def _ehr_pictures(run_dir, settings, outputs, folder):
    from applications.ehr import explain

    patient = _ehr_patient(settings).patient_ids[0]
    page = os.path.join(folder, "ehr-explain.html")
    code = explain.main(
        [
            run_dir,
            "--patient",
            patient,
            "--synthetic-patients",
            str(settings["synthetic-patients"]),
            "--seed",
            str(SEED),
            "--out",
            page,
        ]
    )
    if code:
        raise RuntimeError(f"attention-zoo explain exited with code {code}")
    return [page, os.path.splitext(page)[0] + ".png"]


EHR = Recipe(
    name="ehr",
    trainer="applications.ehr.train",
    settings={"synthetic-patients": 1500, "epochs": 15},
    quick_settings={
        "synthetic-patients": 120,
        "epochs": 1,
        "embedding-dim": 8,
        "units": 8,
    },
    metrics=(("AUROC", "auroc", "{:.3f}"),),
    example=_ehr_example,
    describe=_ehr_describe,
    pictures=_ehr_pictures,
)

RECIPES = {
    recipe.name: recipe for recipe in (TRANSLATION, ENTAILMENT, CAPTIONING, EHR)
}
