"""Bundles trained once per test session and read by several test files.

`shared_bundle(shared, name, bundle_class, train)` gives the bundle that
`train(folder)` trains, the first time any process of the session asks
for `name` (`shared` is the session fixture of `shared_folders`): it is
saved into the session's shared folder `name` (unless `train` wrote a run
there itself, with `fit`'s `checkpoint_dir`), and the other processes
load it with `bundle_class.load` instead of training it again. The
process that trained it keeps the trained bundle itself, and every
process keeps one bundle per name, so that its compiled functions serve
each test file that reads it.

Tests read these bundles and folders, never change them: a test that
writes takes a copy (`shared_folders.copy_of`), saves it elsewhere, or
trains its own.
"""

import os

_BUNDLES = {}
_WEIGHTS_FILE = "model.weights.h5"


def _get(shared, name, bundle_class, train):
    def build(folder):
        bundle = train(folder)
        if not os.path.exists(os.path.join(folder, _WEIGHTS_FILE)):
            bundle.save(str(folder))
        _BUNDLES[name] = bundle

    folder = shared(name, build)
    if name not in _BUNDLES:
        _BUNDLES[name] = bundle_class.load(str(folder))
    return _BUNDLES[name], folder


def shared_bundle(shared, name, bundle_class, train):
    """The bundle `name`, trained once per session by `train(folder)`."""
    return _get(shared, name, bundle_class, train)[0]


def shared_bundle_folder(shared, name, bundle_class, train):
    """The folder (a run, or what `save` writes) of `shared_bundle`."""
    return _get(shared, name, bundle_class, train)[1]


# -- the bundles several test files read ------------------------------------


def ehr_run(shared):
    """`(risk model, run folder)`: the EHR tiny config for 2 epochs on
    `make_synthetic_patients(48, seed=3)`, the folder as `train ehr
    --run-dir` leaves it (the explain and risk-model tests)."""
    from attention_zoo_apps import registry
    from attention_zoo_apps.ehr.risk_model import RiskModel
    from attention_zoo_apps.ehr.synthetic import make_synthetic_patients

    def train(folder):
        config = registry.get("ehr").tiny_config().replace(epochs=2)
        patients = make_synthetic_patients(48, seed=3)
        model = RiskModel(config)
        model.fit(patients.records, checkpoint_dir=str(folder), verbose=0)
        return model

    return _get(shared, "ehr-run", RiskModel, train)


def ehr_events_only(shared):
    """A GRU risk model without notes (tiny config, `max_events=12`,
    `max_note_tokens=10`), 1 epoch on `make_synthetic_patients(40,
    seed=5)` (the export and risk-model tests)."""
    from attention_zoo_apps import registry
    from attention_zoo_apps.ehr.risk_model import RiskModel
    from attention_zoo_apps.ehr.synthetic import make_synthetic_patients

    def train(folder):
        config = registry.get("ehr").tiny_config()
        config = config.replace(
            max_events=12, max_note_tokens=10, encoder="gru", use_notes=False
        )
        model = RiskModel(config)
        model.fit(make_synthetic_patients(40, seed=5).records, verbose=0)
        return model

    return shared_bundle(shared, "ehr-events-only", RiskModel, train)


def entailment_classifier(shared):
    """The entailment tiny config (with attention), 1 epoch on the first
    320 of `make_synthetic_entailment(400, seed=0)` (the classifier and
    export tests)."""
    from attention_zoo_apps import registry
    from attention_zoo_apps.entailment.classifier import EntailmentClassifier
    from attention_zoo_apps.entailment.synthetic import (
        make_synthetic_entailment,
    )

    def train(folder):
        examples = make_synthetic_entailment(400, seed=0).examples
        classifier = EntailmentClassifier(
            registry.get("entailment").tiny_config()
        )
        classifier.fit(examples.select(range(320)), verbose=0)
        return classifier

    return shared_bundle(
        shared, "entailment-attention", EntailmentClassifier, train
    )


def entailment_export(shared):
    """A folder with version 1 of `entailment_classifier`'s export
    (`jit_compile=False`, the default without a GPU)."""

    def build(folder):
        classifier = entailment_classifier(shared)
        classifier.export(str(folder / "export" / "1"), jit_compile=False)

    return shared("entailment-attention-export", build) / "export"
