"""Each application's bundle and its generated training data, for the tests
and benchmarks that train every application the same way.

    bundle_class = synthetic_workloads.bundle_class("captioning")
    bundle = bundle_class(bundle_class.config_class(epochs=1))
    bundle.fit(*synthetic_workloads.fit_arguments("captioning", 40))

`fit_arguments(application, count)` are the positional arguments of the
bundle's `fit`: `Translator.fit(pairs)`, `EntailmentClassifier.fit(
examples)`, `Captioner.fit(images, captions)` and `RiskModel.fit(records)`.
The applications are imported only when asked for.
"""

import importlib

# Application -> its bundle class (`module.Class`), in the order the tests
# and benchmarks list them.
BUNDLES = {
    "translation": "applications.translation.translator.Translator",
    "entailment": "applications.entailment.classifier.EntailmentClassifier",
    "captioning": "applications.captioning.captioner.Captioner",
    "ehr": "applications.ehr.risk_model.RiskModel",
}
APPLICATIONS = tuple(BUNDLES)


def bundle_class(application):
    """The `SavedBundle` subclass of `application` (its config class is
    the bundle class's `config_class`)."""
    if application not in BUNDLES:
        raise ValueError(f"Unknown application: {application!r}")
    module, _, name = BUNDLES[application].rpartition(".")
    return getattr(importlib.import_module(module), name)


def fit_arguments(application, count, seed=0, image_size=32):
    """`count` generated training examples of `application`, as the
    positional arguments of its bundle's `fit`.

    Args:
        application: str, one of `APPLICATIONS`.
        count: int, how many pairs, examples, images or patients.
        seed: int, the generator's seed. Defaults to `0`.
        image_size: int, the side in pixels of captioning's images.
            Defaults to `32`.

    Returns:
        A tuple: `(pairs,)` (a list of `(source, target)` str pairs),
        `(examples,)` (`EntailmentExamples`), `(images, captions)` (a
        float32 array `(count, image_size, image_size, 3)` and a list of
        str) or `(records,)` (`PatientRecords`).
    """
    if application == "translation":
        from applications.translation.data import make_synthetic_pairs

        return (make_synthetic_pairs(count, seed=seed).pairs,)
    if application == "entailment":
        from applications.entailment.data import make_synthetic_entailment

        return (make_synthetic_entailment(count, seed=seed).examples,)
    if application == "captioning":
        from applications.captioning.shapes import make_synthetic_shapes

        shapes = make_synthetic_shapes(count, image_size=image_size, seed=seed)
        return shapes.images, shapes.captions
    if application == "ehr":
        from applications.ehr.synthetic import make_synthetic_patients

        return (make_synthetic_patients(count, seed=seed).records,)
    raise ValueError(f"Unknown application: {application!r}")
