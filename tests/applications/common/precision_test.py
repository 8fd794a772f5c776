"""`--precision`: every application trains under `mixed_bfloat16` without
NaN, keeps float32 outputs, decodes / predicts, records the policy in its
config and builds a loaded bundle under it."""

import json

import keras
import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps import registry
from attention_zoo_apps.common import precision
from attention_zoo_apps.ehr.config import EHRConfig
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from attention_zoo_apps.entailment import data as entailment_data
from attention_zoo_apps.entailment.classifier import EntailmentClassifier
from attention_zoo_apps.entailment.config import EntailmentConfig
from tests.support.ehr_inputs import served_risk
from tests.support.resume_checks import check_fit_resumes

BF16 = "mixed_bfloat16"
# Two epochs: the mean loss of the second is below the first's for every
# model here (by 0.7 to 7 %; it goes on falling at about that rate per
# epoch), and each epoch of a bfloat16 model costs seconds on a CPU.
EPOCHS = 2


@pytest.fixture(autouse=True)
def float32_policy():
    """Every test starts and ends under float32: nothing leaks."""
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def _tiny(application, **changes):
    """APPLICATION's tiny config with `changes`."""
    return registry.get(application).tiny_config().replace(**changes)


def _fit(application, config, count, seed=0):
    """`(bundle, history, fit_arguments)`: APPLICATION's bundle with
    `config` trained for `EPOCHS` on `count` generated examples."""
    described = registry.get(application)
    data = described.fit_arguments(count, seed=seed)
    bundle = described.bundle_class()(config)
    history = bundle.fit(*data, epochs=EPOCHS, verbose=0)
    return bundle, history, data


def _translation(model):
    config = _tiny(
        "translation",
        model=model,
        units=16,
        model_dim=16,
        num_heads=2,
        feed_forward_dim=32,
        num_layers=1,
        source_vocabulary_size=120,
        target_vocabulary_size=120,
        max_length=10,
        learning_rate=3e-3,
        precision=BF16,
    )
    translator, history, (pairs,) = _fit("translation", config, 96)

    def check_outputs(bundle):
        texts = [source for source, _ in pairs[:3]]
        result = bundle.decode(bundle.source_ids(texts), beam_size=2)
        for key in ("scores", "attention"):
            _check_float32(result[key].numpy())
        translations = bundle.translate(texts, beam_size=2)
        assert all(isinstance(t, str) for t in translations)

    batch = next(iter(translator.dataset(pairs[:4])))[0]
    return translator, history, batch, check_outputs


def _entailment():
    config = _tiny(
        "entailment",
        vocabulary_size=200,
        max_length=12,
        intra_attention=True,
        dropout=0.0,
        learning_rate=3e-3,
        precision=BF16,
    )
    classifier, history, (examples,) = _fit("entailment", config, 96)

    def check_outputs(bundle):
        result = bundle.predict(examples.premises[:4], examples.hypotheses[:4])
        probabilities = result["probabilities"]
        _check_float32(probabilities)
        np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
        for alignment in result["alignment"]:
            _check_float32(alignment)

    batch = next(iter(classifier.dataset(examples.select(range(4)))))[0]
    return classifier, history, batch, check_outputs


def _captioning():
    config = _tiny(
        "captioning",
        vocabulary_size=60,
        max_length=8,
        learning_rate=3e-3,
        precision=BF16,
    )
    captioner, history, (images, captions) = _fit("captioning", config, 48)

    def check_outputs(bundle):
        texts, maps, _ = bundle.caption(
            images[:3], beam_size=2, return_attention=True
        )
        assert len(texts) == 3 and all(isinstance(t, str) for t in texts)
        for heatmaps in maps:
            _check_float32(heatmaps)

    batch = captioner.dataset(images[:4], captions[:4])
    return captioner, history, next(iter(batch))[0], check_outputs


def _ehr():
    config = _tiny("ehr", learning_rate=3e-3, dropout=0.0, precision=BF16)
    risk_model, history, (records,) = _fit("ehr", config, 64, seed=3)

    def check_outputs(bundle):
        result = bundle.predict(records.select(range(4)), top_k=2)
        _check_float32(result["risk"])

    encoded = risk_model.encode(records.select(range(4)))
    batch = {name: encoded[name] for name in risk_model.model.input}
    return risk_model, history, batch, check_outputs


TRAINERS = {
    "translation-rnn": lambda: _translation("rnn"),
    "translation-transformer": lambda: _translation("transformer"),
    "entailment": _entailment,
    "captioning": _captioning,
    "ehr": _ehr,
}
# Each application trained under mixed_bfloat16: the Transformer
# translator (the most attention layers, the widest softmax) in the quick
# suite, the other four in the slow tier (the EHR one is trained in the
# quick suite anyway, for its export).
APPLICATIONS = [
    pytest.param(
        application,
        marks=[]
        if application in ("translation-transformer", "ehr")
        else [pytest.mark.slow],
    )
    for application in TRAINERS
]


def _check_float32(array):
    array = np.asarray(array)
    assert array.dtype == np.float32, array.dtype
    assert np.all(np.isfinite(array))


@pytest.fixture(scope="module")
def trained():
    """`trained(application)`: `(bundle, history, batch, check_outputs)`,
    trained once per module."""
    cache = {}

    def get(application):
        if application not in cache:
            cache[application] = TRAINERS[application]()
        return cache[application]

    return get


def _outputs(model, batch):
    outputs = keras.tree.flatten(model(batch, training=False))
    return [keras.ops.convert_to_numpy(output) for output in outputs]


@pytest.mark.parametrize("application", APPLICATIONS)
def test_mixed_bfloat16_trains_without_nan(trained, application):
    bundle, history, batch, check_outputs = trained(application)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)), losses
    assert losses[-1] < losses[0], losses
    # Built under the config's policy; the global one is untouched.
    assert keras.mixed_precision.global_policy().name == "float32"
    assert bundle.model.dtype_policy.name == BF16
    assert all(weight.dtype == "float32" for weight in bundle.model.weights)
    for output in _outputs(bundle.model, batch):
        _check_float32(output)
    check_outputs(bundle)


@pytest.mark.parametrize("application", APPLICATIONS)
def test_loaded_bundle_keeps_the_policy(trained, application, tmp_path):
    bundle, _, batch, check_outputs = trained(application)
    bundle.save(str(tmp_path))
    with open(tmp_path / "config.json") as f:
        assert json.load(f)["precision"] == BF16
    loaded = type(bundle).load(str(tmp_path))
    assert loaded.model.dtype_policy.name == BF16
    for actual, expected in zip(
        _outputs(loaded.model, batch), _outputs(bundle.model, batch)
    ):
        np.testing.assert_allclose(actual, expected, atol=1e-6)
    check_outputs(loaded)


def test_export_of_a_bfloat16_model_serves(trained, tmp_path):
    risk_model, _, _, _ = trained("ehr")
    records = make_synthetic_patients(64, seed=3).records.select(range(4))
    expected = risk_model.predict(records)["risk"]
    path = str(tmp_path / "ehr" / "1")
    risk_model.export(path, jit_compile=False)
    served = served_risk(path, records)
    assert served["dtype"] == "float32"
    assert np.all(np.isfinite(served["risk"]))
    np.testing.assert_allclose(served["risk"], expected, atol=1e-2)


def test_old_configs_load_as_float32():
    for application in registry.all_applications():
        config_class = application.config_class()
        values = json.loads(config_class().to_json())
        del values["precision"]  # a config saved before the field existed
        loaded = config_class.from_json(json.dumps(values))
        assert loaded.precision == "float32"
        mixed = config_class(precision=BF16)
        assert config_class.from_json(mixed.to_json()) == mixed
        with pytest.raises(ValueError, match="precision"):
            config_class(precision="bfloat16")


def test_policy_scope_restores_the_global_policy():
    with precision.policy_scope(BF16):
        layer = keras.layers.Dense(2)
    assert layer.dtype_policy.name == BF16
    assert keras.mixed_precision.global_policy().name == "float32"
    with pytest.raises(ValueError, match="precision"):
        precision.set_precision("float16")


def test_interrupted_bfloat16_run_resumes_under_its_policy(tmp_path):
    examples = entailment_data.make_synthetic_entailment(64, seed=0).examples
    config = EntailmentConfig(
        embedding_dim=8,
        hidden_units=8,
        vocabulary_size=200,
        max_length=12,
        batch_size=32,
        precision=BF16,
    )
    _, resumed = check_fit_resumes(
        lambda: EntailmentClassifier(config),
        EntailmentClassifier.load_assets,
        examples,
        str(tmp_path / "run"),
    )
    assert resumed.config.precision == BF16
    assert resumed.model.dtype_policy.name == BF16


def test_train_flag_sets_and_records_the_policy(tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = [
        "train",
        "ehr",
        "--synthetic-patients",
        "40",
        "--epochs",
        "1",
        "--embedding-dim",
        "8",
        "--units",
        "8",
        "--batch-size",
        "16",
        "--precision",
        BF16,
        "--no-tensorboard",
        "--run-dir",
        str(run_dir),
    ]
    assert cli.main(argv) == 0
    assert keras.mixed_precision.global_policy().name == BF16
    with open(run_dir / "config.json") as f:
        assert json.load(f)["precision"] == BF16
    config = EHRConfig(precision=BF16)
    capsys.readouterr()
    precision.use_run_precision(config, "float32")  # a resumed run
    assert "--precision float32 ignored" in capsys.readouterr().out
    assert keras.mixed_precision.global_policy().name == BF16
