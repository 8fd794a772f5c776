"""Entailment trained on the JAX backend, as a user runs it, then taken on
by TensorFlow; what needs TensorFlow says so on JAX; the export process
names what failed.

The training run is checked as in jax_translation_training_test.py:
interrupted, resumed, exported by a TensorFlow process and served
without Keras or the project; on the TensorFlow line these are skipped.
The file's tests share the one run (`entailment_run`): its bundle is the
one the failing export process is handed.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from attention_zoo_apps.common import backend_export
from tests.support import fresh_process
from tests.support import jax_runs
from tests.support.tiny_runs import TINY_FLAGS

pytestmark = jax_runs.ONLY_ON_JAX


@pytest.fixture(scope="module")
def entailment_run(tmp_path_factory):
    """`(classifier, export, run folder)` of the file's one JAX run."""
    return jax_runs.train_once_on_jax(tmp_path_factory, "entailment")


def test_entailment_trains_resumes_and_exports_on_jax(entailment_run):
    from attention_zoo_apps.entailment import synthetic

    classifier, path, run_dir = entailment_run
    examples = synthetic.make_synthetic_entailment(6, seed=7).examples
    premises, hypotheses = list(examples.premises), list(examples.hypotheses)
    expected = classifier.predict(premises, hypotheses)
    served = fresh_process.run_without_project(
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
    argv += ["--run-dir", run_dir]
    done = subprocess.run(
        [sys.executable, "-m", "attention_zoo_apps.cli", *argv],
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
    from attention_zoo_apps import cli
    from attention_zoo_apps.ehr import infer

    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", "ehr", "--strategy", "mirrored"])
    assert exit_.value.code == 2
    assert "KERAS_BACKEND=tensorflow" in capsys.readouterr().err
    assert infer.main([str(tmp_path), "--patient", "p0"]) == 2
    assert "KERAS_BACKEND=tensorflow" in capsys.readouterr().err


def test_the_export_process_names_what_failed(entailment_run, tmp_path):
    bundle, _, _ = entailment_run  # trained on JAX: its export needs TF
    # A module class the TensorFlow process cannot import by its name.
    local = type("LocalModule", (), {"__module__": "no_such_module"})
    with pytest.raises(RuntimeError, match="no_such_module") as error:
        backend_export.export_in_tensorflow(
            bundle, local, str(tmp_path / "1"), None, None, None, {}
        )
    assert "TensorFlow backend failed" in str(error.value)
    assert not os.path.exists(tmp_path / "1")
