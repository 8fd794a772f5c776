"""EHR in `attention-zoo demo`: synthetic patients whose risk comes from
planted codes and phrases."""

import os

from attention_zoo_apps.demo.recipe import SEED
from attention_zoo_apps.demo.recipe import Recipe
from attention_zoo_apps.ehr import infer
from attention_zoo_apps.ehr.data import split_patients
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients


def _patient(settings):
    """The record of the first planted positive of the test split (the
    first test patient when there is none), as `train ehr` splits them."""
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


def _example(settings):
    record = _patient(settings)
    return {
        "codes": [list(record.codes[0])],
        "values": [record.values[0].tolist()],
        "times": [record.times[0].tolist()],
        "prediction_time": [float(record.prediction_times[0])],
        "note": [record.notes[0]],
    }


def _describe(example, outputs):
    return f"risk {outputs['risk'][0]:.3f}"


def _pictures(run_dir, settings, outputs, folder):
    """`attention-zoo explain` of the example's patient."""
    patient = _patient(settings).patient_ids[0]
    page = os.path.join(folder, "ehr-explain.html")
    code = infer.main(
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


RECIPE = Recipe(
    settings={"synthetic-patients": 1500, "epochs": 15},
    quick_settings={
        "synthetic-patients": 120,
        "epochs": 1,
        "embedding-dim": 8,
        "units": 8,
    },
    metrics=(("AUROC", "auroc", "{:.3f}"),),
    example=_example,
    describe=_describe,
    pictures=_pictures,
)
