"""EntailmentClassifier end to end on generated data: fit, predict,
evaluate, save/load, export, resume."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import registry
from attention_zoo_apps.entailment.classifier import EntailmentClassifier
from attention_zoo_apps.entailment.classifier import classification_report
from attention_zoo_apps.entailment.config import EntailmentConfig
from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.examples import split_examples
from attention_zoo_apps.entailment.synthetic import make_synthetic_entailment
from tests.support import fresh_process
from tests.support import shared_bundles
from tests.support.cue_alignment import cue_hits
from tests.support.resume_checks import check_fit_resumes

TINY = registry.get("entailment").tiny_config()


@pytest.fixture(scope="module")
def generated():
    return make_synthetic_entailment(400, seed=0).examples


@pytest.fixture(scope="module")
def baseline_fit(generated):
    """The baseline trained on the first 320 generated examples, and how
    many times its `fit` traced `train_step`: `(classifier, traces)`."""
    baseline = EntailmentClassifier(TINY.replace(attention=False))
    traces = []
    train_step = keras.Model.train_step

    def counted(model, data):
        traces.append(1)  # Python runs here only while tracing
        return train_step(model, data)

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(keras.Model, "train_step", counted)
        baseline.fit(generated.select(range(320)), verbose=0)
    return baseline, len(traces)


@pytest.fixture(scope="module")
def classifiers(baseline_fit, shared):
    """Both variants trained on the first 320 generated examples (read
    only): the attention one shared with the export tests."""
    baseline, _ = baseline_fit
    attention = shared_bundles.entailment_classifier(shared)
    assert attention.config == TINY.replace(attention=True)
    return {"attention": attention, "baseline": baseline}


@pytest.fixture(params=["attention", "baseline"])
def variant(request):
    return request.param


@pytest.fixture
def classifier(classifiers, variant):
    return classifiers[variant]


def test_config_checks_and_json_round_trip():
    with pytest.raises(ValueError, match="hidden_units"):
        EntailmentConfig(hidden_units=0)
    with pytest.raises(ValueError, match="dropout"):
        EntailmentConfig(dropout=1.0)
    with pytest.raises(ValueError, match="intra_attention"):
        EntailmentConfig(attention=False, intra_attention=True)
    config = TINY.replace(intra_attention=True)
    assert EntailmentConfig.from_json(config.to_json()) == config
    with pytest.raises(ValueError, match="Unknown"):
        EntailmentConfig.from_json('{"units": 3}')


def test_fit_traces_its_train_step_once(baseline_fit):
    # The optimizer's slots exist before `fit` (`SavedBundle.fit_datasets`):
    # TensorFlow would otherwise trace the train step a second time, for
    # the variables the first trace created.
    _, traces = baseline_fit
    assert traces == 1


def test_predict_returns_labels_probabilities_and_alignment(
    classifier, generated
):
    premises = generated.premises[:5] + ["dog"]  # one token
    hypotheses = generated.hypotheses[:5] + ["a dog"]
    result = classifier.predict(premises, hypotheses)
    assert len(result["labels"]) == 6
    assert set(result["labels"]) <= set(LABELS)
    probabilities = result["probabilities"]
    assert probabilities.shape == (6, 3) and probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    assert result["labels"] == [LABELS[i] for i in probabilities.argmax(-1)]
    if not classifier.config.attention:
        assert "alignment" not in result
        return
    for i, weights in enumerate(result["alignment"]):
        m = len(result["premise_tokens"][i])
        n = len(result["hypothesis_tokens"][i])
        assert weights.shape == (m, n)
        if m and n:
            np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    # One pair alone gives what it gets in a batch (bucket padding).
    alone = classifier.predict(premises[1:2], hypotheses[1:2])
    np.testing.assert_allclose(
        alone["probabilities"][0], probabilities[1], atol=1e-5
    )
    np.testing.assert_allclose(
        alone["alignment"][0], result["alignment"][1], atol=1e-5
    )


def test_batches_pad_to_length_buckets_on_jax(generated, monkeypatch):
    classifier = EntailmentClassifier(TINY.replace(batch_size=16))
    examples = generated.select(range(160))
    classifier.ensure_tokenizer(examples)
    plain = list(classifier.dataset(examples))
    # `dataset` decides by the backend: JAX compiles a step per shape.
    monkeypatch.setattr(
        "attention_zoo_apps.entailment.classifier.keras.backend.backend",
        lambda: "jax",
    )
    bucketed = list(classifier.dataset(examples))
    multiple = classifier.length_multiple
    lengths = set()
    for (inputs, labels), (padded, padded_labels) in zip(plain, bucketed):
        np.testing.assert_array_equal(labels, padded_labels)
        for key in ("premise", "hypothesis"):
            a, b = inputs[key].numpy(), padded[key].numpy()
            length = a.shape[1]
            expected = min(-(-length // multiple) * multiple, TINY.max_length)
            assert b.shape == (a.shape[0], expected), key
            np.testing.assert_array_equal(b[:, :length], a)
            assert np.all(b[:, length:] == 0)  # PAD
            lengths.add(b.shape[1])
    assert len(lengths) < len({x[0][k].shape[1] for x in plain for k in x[0]})


def test_classification_report_against_hand_counts():
    labels = [0, 0, 1, 2, 2, 2]
    predictions = [0, 1, 1, 2, 0, 2]
    report = classification_report(labels, predictions)
    assert report["confusion"].tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]
    assert report["accuracy"] == pytest.approx(4 / 6)
    assert report["precision"]["entailment"] == pytest.approx(1 / 2)
    assert report["recall"]["contradiction"] == pytest.approx(2 / 3)
    assert report["precision"]["neutral"] == pytest.approx(1 / 2)


def test_evaluate_matches_predict(classifier, generated):
    held_out = generated.select(range(320, 400))
    report = classifier.evaluate(held_out)
    predicted = classifier.predict(held_out.premises, held_out.hypotheses)
    hits = [
        LABELS[t] == p for t, p in zip(held_out.labels, predicted["labels"])
    ]
    assert report["accuracy"] == pytest.approx(np.mean(hits))
    assert report["confusion"].sum() == len(held_out)


def test_save_and_load_predict_alike(classifier, generated, tmp_path):
    classifier.save(tmp_path)
    loaded = EntailmentClassifier.load(tmp_path)
    a = classifier.predict(generated.premises[:4], generated.hypotheses[:4])
    b = loaded.predict(generated.premises[:4], generated.hypotheses[:4])
    np.testing.assert_allclose(
        b["probabilities"], a["probabilities"], atol=1e-6
    )


def _served_pairs(generated):
    """Four generated pairs and a one-word pair (an empty sentence is
    refused by the export: `entailment_export_test.py`)."""
    return generated.premises[:4] + ["dog"], generated.hypotheses[:4] + ["a"]


@pytest.fixture(scope="module")
def export_paths(classifiers, shared, tmp_path_factory):
    """Each variant exported once (read-only): variant -> path. The
    attention one's is the export the export tests read."""
    baseline = tmp_path_factory.mktemp("export") / "entailment" / "1"
    classifiers["baseline"].export(str(baseline))
    attention = shared_bundles.entailment_export(shared) / "1"
    return {"attention": str(attention), "baseline": str(baseline)}


@pytest.fixture
def export_path(export_paths, variant):
    return export_paths[variant]


@pytest.fixture(scope="module")
def served_all(export_paths, generated):
    """What one fresh process without Keras or the project answers from
    each export (as TF Serving would), and which of its ops neither
    TensorFlow nor tensorflow-text registers: variant -> answer."""
    premises, hypotheses = _served_pairs(generated)
    jobs = [
        (name, path, sorted(fresh_process.saved_model_ops(path)))
        for name, path in export_paths.items()
    ]
    return fresh_process.run_without_project(
        f"""
results = {{}}
for name, path, ops in {jobs!r}:
    model = tf.saved_model.load(path)
    serve = model.signatures["serving_default"]
    out = serve(premise=tf.constant({premises!r}),
                hypothesis=tf.constant({hypotheses!r}))
    results[name] = {{
        "label": [t.decode() for t in out["label"].numpy()],
        "probabilities": out["probabilities"].numpy().tolist(),
        "alignment": out["alignment"].numpy().tolist(),
        "alignment_dtype": out["alignment"].dtype.name,
        "inputs": sorted(serve.structured_input_signature[1]),
        "outputs": sorted(serve.structured_outputs),
        "unknown_ops": unregistered_ops(ops),
    }}
emit(results)
"""
    )


@pytest.fixture
def served(served_all, variant):
    return served_all[variant]


def test_export_serves_the_same_predictions_without_the_project(
    classifier, generated, served
):
    expected = classifier.predict(*_served_pairs(generated))
    assert served["inputs"] == ["hypothesis", "premise"]
    assert served["outputs"] == [
        "alignment",
        "label",
        "probabilities",
        "truncated",
    ]
    assert served["label"] == expected["labels"]
    np.testing.assert_allclose(
        served["probabilities"], expected["probabilities"], atol=1e-5
    )
    alignment = np.array(served["alignment"])
    assert served["alignment_dtype"] == "float32"
    m = max(len(t) for t in expected["premise_tokens"])
    n = max(len(t) for t in expected["hypothesis_tokens"])
    assert alignment.shape == (5, m, n)
    if classifier.config.attention:
        for i, weights in enumerate(expected["alignment"]):
            rows, columns = weights.shape
            np.testing.assert_allclose(
                alignment[i, :rows, :columns], weights, atol=1e-5
            )
    else:
        assert np.all(alignment == 0)


def test_exported_graph_uses_only_tensorflow_and_text_ops(served):
    unknown = served["unknown_ops"]
    assert not unknown, f"ops outside TensorFlow and TF Text: {unknown}"


def test_bad_input_gives_clear_errors(classifier, export_path):
    with pytest.raises(TypeError, match="premises"):
        classifier.predict("a dog", "an animal")
    with pytest.raises(ValueError, match="same length"):
        classifier.predict(["a", "b"], ["c"])
    with pytest.raises(TypeError, match="EntailmentExamples"):
        classifier.evaluate([("a", "b", 0)])
    with pytest.raises(ValueError, match="no model"):
        EntailmentClassifier(TINY).predict(["a"], ["b"])
    # The export's and the CLI's contract: no empty sentence, no silent cut.
    with pytest.raises(ValueError, match=r"`hypotheses`.*: \[1\]"):
        classifier.predict(["a dog", "a cat"], ["an animal", " \u00a0 "])
    long = " ".join(["dog"] * (classifier.config.max_length + 1))
    result = classifier.predict(["a dog", long], ["an animal", "a cat"])
    assert result["truncated"] == [False, True]
    serve = tf.saved_model.load(export_path).signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="same length"):
        serve(premise=tf.constant(["a", "b"]), hypothesis=tf.constant(["c"]))
    empty = serve(
        premise=tf.constant([], tf.string),
        hypothesis=tf.constant([], tf.string),
    )
    assert empty["probabilities"].shape == (0, 3)


def test_interrupted_fit_resumes_from_its_last_epoch(generated, tmp_path):
    first, resumed = check_fit_resumes(
        lambda: EntailmentClassifier(TINY),
        EntailmentClassifier.load_assets,
        generated.select(range(96)),
        str(tmp_path / "run"),
    )
    assert resumed.tokenizer.vocabulary == first.tokenizer.vocabulary


# The plain model's run is the full demo's (demo_test.test_full_demo: the
# same defaults, its accuracy and alignment checked on the export).
@pytest.mark.slow
def test_intra_attention_learns_the_generated_data():
    from attention_zoo_apps.entailment.train import SYNTHETIC_DEFAULTS

    generated = make_synthetic_entailment(6000, seed=3)
    train, validation = split_examples(generated.examples, 0.1, seed=3)
    config = EntailmentConfig(**SYNTHETIC_DEFAULTS, intra_attention=True)
    classifier = EntailmentClassifier(config)
    classifier.fit(train, verbose=0)
    report = classifier.evaluate(validation)
    # Chance is 1/3. Measured 0.953 on an AVX2-only EPYC (with the
    # synthetic learning rate 3e-3 of before: 0.805 there, above 0.85 on
    # AVX-512 CPUs; the rate is 1e-3 since, see SYNTHETIC_DEFAULTS).
    assert report["accuracy"] > 0.85, report
    # The alignment links the decisive word pairs more often than a
    # uniform guess over the hypothesis would. With intra-attention each
    # word also carries its neighbours and the alignment may spread:
    # measured 5.0 times chance (451 hits) on the same EPYC; the bar of 2
    # leaves room for other CPUs' arithmetic.
    hits, chance = cue_hits(classifier)
    assert hits > 2 * chance, (hits, chance)
