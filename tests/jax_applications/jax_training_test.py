"""The four applications trained on the JAX backend, as a user runs them.

Each test runs `attention-zoo train APP` on the generated data with
`KERAS_BACKEND=jax`, interrupted at its second epoch and run again (it
must resume from the first epoch's weights, `check_cli_resumes`), then
evaluated and exported with `--export`: the export is written by a
TensorFlow process from the JAX run's weights
(`applications.common.backend_export`), and served without Keras or the
project it must give what the JAX model gives in process for the same
inputs.

These run in README's JAX test line (`KERAS_BACKEND=jax python -m pytest
... tests/jax_applications`); Keras picks its backend once per process,
so on the TensorFlow line they are skipped (the TensorFlow runs are
tested under `tests/applications`).
"""

import io
import math
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from PIL import Image

from applications import registry
from applications.common import backend_export
from tests import export_testing
from tests import resume_testing
from tests.applications.ehr.ehr_serving_inputs import served_risk
from tests.applications.tiny_runs import TINY_FLAGS

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="JAX-backend runs: README's JAX test line runs them",
)


def _train_on_jax(monkeypatch, tmp_path, app, *flags):
    """The resumed run's bundle (JAX) and its export's version folder."""
    assert keras.backend.backend() == "jax"
    run_dir = str(tmp_path / "run")
    export_dir = tmp_path / "export"
    argv = ["train", app, *TINY_FLAGS[app], *flags, "--epochs", "2"]
    argv += ["--run-dir", run_dir, "--export", str(export_dir)]
    bundle_class = registry.get(app).bundle_class()
    _, resumed = resume_testing.check_cli_resumes(
        monkeypatch, bundle_class, argv, run_dir
    )
    # The weights live in JAX arrays: the model really trained on JAX.
    assert "jax" in type(resumed.model.weights[0].value).__module__
    path = export_dir / "1"
    assert (path / "saved_model.pb").exists()
    assert not (export_dir / "2").exists()  # one export: the resumed run's
    return resumed, str(path)


def test_translation_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from applications.translation import synthetic

    translator, path = _train_on_jax(monkeypatch, tmp_path, "translation")
    pairs = synthetic.make_synthetic_pairs(6, seed=7).pairs
    texts = [source for source, _ in pairs] + [""]
    expected, maps, scores = translator.translate(
        texts, return_attention=True, return_scores=True
    )
    served = export_testing.run_without_project(
        f"""
serve = tf.saved_model.load({path!r}).signatures["serving_default"]
out = serve(text=tf.constant({texts!r}))
emit({{"translation": [t.decode() for t in out["translation"].numpy()],
       "attention": out["attention"].numpy().tolist()}})
"""
    )
    assert served["translation"] == expected
    attention = np.array(served["attention"])
    for row, weights in enumerate(maps[:-1]):
        steps, sources = weights.shape
        np.testing.assert_allclose(
            attention[row, :steps, :sources], weights, atol=1e-5
        )
    assert all(math.isfinite(score) for score in scores)


def test_entailment_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from applications.entailment import synthetic

    classifier, path = _train_on_jax(monkeypatch, tmp_path, "entailment")
    examples = synthetic.make_synthetic_entailment(6, seed=7).examples
    premises, hypotheses = list(examples.premises), list(examples.hypotheses)
    expected = classifier.predict(premises, hypotheses)
    served = export_testing.run_without_project(
        f"""
serve = tf.saved_model.load({path!r}).signatures["serving_default"]
out = serve(premise=tf.constant({premises!r}),
            hypothesis=tf.constant({hypotheses!r}))
emit({{"label": [t.decode() for t in out["label"].numpy()],
       "probabilities": out["probabilities"].numpy().tolist()}})
"""
    )
    assert served["label"] == expected["labels"]
    np.testing.assert_allclose(
        served["probabilities"], expected["probabilities"], atol=1e-5
    )
    # The run folder is the same on both backends: TensorFlow goes on.
    argv = ["train", "entailment", *TINY_FLAGS["entailment"], "--epochs", "3"]
    argv += ["--run-dir", str(tmp_path / "run")]
    done = subprocess.run(
        [sys.executable, "-m", "applications.cli", *argv],
        env=backend_export.tensorflow_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Continuing the finished run" in done.stdout
    assert "up to epoch 3" in done.stdout
    assert "Epoch 3/3" in done.stdout and "Epoch 2/3" not in done.stdout


def test_what_needs_tensorflow_says_so_on_jax(tmp_path, capsys):
    from applications import cli
    from applications.ehr import serve

    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", "ehr", "--strategy", "mirrored"])
    assert exit_.value.code == 2
    assert "KERAS_BACKEND=tensorflow" in capsys.readouterr().err
    assert serve.main([str(tmp_path), "--patient", "p0"]) == 2
    assert "KERAS_BACKEND=tensorflow" in capsys.readouterr().err


def test_ehr_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from applications.ehr import synthetic

    risk_model, path = _train_on_jax(monkeypatch, tmp_path, "ehr")
    records = synthetic.make_synthetic_patients(6, seed=7).records
    # float32 times, as served.
    records.times = [
        t.astype("float32").astype("float64") for t in records.times
    ]
    records.prediction_times = records.prediction_times.astype(
        "float32"
    ).astype("float64")
    expected = risk_model.predict(records)["risk"]
    served = served_risk(path, records)
    np.testing.assert_allclose(served["risk"], expected, atol=1e-5)
    assert len(set(np.round(expected, 4))) > 1  # not a constant model


def _png(image):
    """PNG bytes of a float image in [0, 1]."""
    buffer = io.BytesIO()
    Image.fromarray(np.round(image * 255).astype("uint8")).save(
        buffer, format="PNG"
    )
    return buffer.getvalue()


def test_captioning_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from applications.captioning import synthetic

    captioner, path = _train_on_jax(monkeypatch, tmp_path, "captioning")
    images, _ = synthetic.fit_arguments(3, seed=7, image_size=32)
    encoded = [_png(image) for image in images]
    # What the server decodes: the PNGs' 8-bit pixels, back in [0, 1].
    pixels = np.stack(
        [np.asarray(Image.open(io.BytesIO(png))) for png in encoded]
    ).astype("float32")
    expected, maps, _ = captioner.caption(
        pixels / 255.0, beam_size=1, return_attention=True
    )
    served = export_testing.run_without_project(
        f"""
serve = tf.saved_model.load({path!r}).signatures["serving_default"]
out = serve(image=tf.constant({encoded!r}))
emit({{"caption": [t.decode() for t in out["caption"].numpy()],
       "attention": out["attention"].numpy().tolist()}})
"""
    )
    assert served["caption"] == expected
    attention = np.array(served["attention"])
    for row, heatmaps in enumerate(maps):
        np.testing.assert_allclose(
            attention[row, : len(heatmaps)], heatmaps, atol=1e-4
        )


def test_the_export_process_names_what_failed(tmp_path):
    application = registry.get("entailment")
    bundle = application.bundle_class()(application.tiny_config())
    bundle.fit(*application.fit_arguments(40), verbose=0)
    # A module class the TensorFlow process cannot import by its name.
    local = type("LocalModule", (), {"__module__": "no_such_module"})
    with pytest.raises(RuntimeError, match="no_such_module") as error:
        backend_export.export_in_tensorflow(
            bundle, local, str(tmp_path / "1"), None, None, None, {}
        )
    assert "TensorFlow backend failed" in str(error.value)
    assert not os.path.exists(tmp_path / "1")
