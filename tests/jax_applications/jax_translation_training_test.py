"""Translation trained on the JAX backend, as a user runs it (entailment,
captioning and EHR risk in their own files, so that the JAX line's test
processes share the four runs).

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

import math

import numpy as np

from tests.support import fresh_process
from tests.support import jax_runs

pytestmark = jax_runs.ONLY_ON_JAX


def test_translation_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from applications.translation import synthetic

    translator, path = jax_runs.train_on_jax(
        monkeypatch, tmp_path, "translation"
    )
    pairs = synthetic.make_synthetic_pairs(6, seed=7).pairs
    texts = [source for source, _ in pairs] + [""]
    expected, maps, scores = translator.translate(
        texts, return_attention=True, return_scores=True
    )
    served = fresh_process.run_without_project(
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
