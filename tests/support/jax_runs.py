"""What the JAX-backend application tests share: the skip on the
TensorFlow line, and a CLI training run interrupted, resumed and exported
on JAX (`train_on_jax`; `train_once_on_jax` for a module-scoped fixture,
so that the tests of a file share one run)."""

import keras
import pytest

from attention_zoo_apps import registry
from tests.support import resume_checks
from tests.support.tiny_runs import TINY_FLAGS

# Keras picks its backend once per process: on the TensorFlow line these
# tests are skipped (the TensorFlow runs are tested under tests/applications).
ONLY_ON_JAX = pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="JAX-backend runs: README's JAX test line runs them",
)


def train_on_jax(monkeypatch, tmp_path, app, *flags):
    """The resumed run's bundle (JAX) and its export's version folder."""
    assert keras.backend.backend() == "jax"
    run_dir = str(tmp_path / "run")
    export_dir = tmp_path / "export"
    argv = ["train", app, *TINY_FLAGS[app], *flags, "--epochs", "2"]
    argv += ["--run-dir", run_dir, "--export", str(export_dir)]
    bundle_class = registry.get(app).bundle_class()
    _, resumed = resume_checks.check_cli_resumes(
        monkeypatch, bundle_class, argv, run_dir
    )
    # The weights live in JAX arrays: the model really trained on JAX.
    assert "jax" in type(resumed.model.weights[0].value).__module__
    path = export_dir / "1"
    assert (path / "saved_model.pb").exists()
    assert not (export_dir / "2").exists()  # one export: the resumed run's
    return resumed, str(path)


def train_once_on_jax(tmp_path_factory, app, *flags):
    """`train_on_jax` in a folder of its own, for a module-scoped fixture
    (seeded as the tests are): `(bundle, export version folder, run
    folder)`. The run folder is the fixture's: one test may go on with
    it (its last user in the file)."""
    keras.utils.set_random_seed(0)
    tmp_path = tmp_path_factory.mktemp(f"jax_{app}")
    with pytest.MonkeyPatch.context() as monkeypatch:
        bundle, path = train_on_jax(monkeypatch, tmp_path, app, *flags)
    return bundle, path, str(tmp_path / "run")
