"""Translation trained on the JAX backend, as a user runs it (entailment,
captioning and EHR risk in their own files, so that the JAX line's test
processes share the four runs).

Each test runs `attention-zoo train APP` on the generated data with
`KERAS_BACKEND=jax` (translation with `--distribution data-parallel`,
over the two host devices of the JAX line), interrupted at its second
epoch and run again (it must resume from the first epoch's weights,
`check_cli_resumes`), then
evaluated and exported with `--export`: the export is written by a
TensorFlow process from the JAX run's weights
(`attention_zoo_apps.common.backend_export`), and served without Keras or the
project it must give what the JAX model gives in process for the same
inputs.

Sampling draws alike on JAX and in the TensorFlow export: the translator
trained on JAX here, exported with sampling (again by a TensorFlow
process), serves through `seeded` the translations JAX samples in
process with the same seeds (the noise is a hash of seed, step and token
id, computed bit for bit alike by both backends).

The file's tests share the one run (`translation_run`), and one process
without Keras or the project serves both exports (`served`).

These run in README's JAX test line (`KERAS_BACKEND=jax python -m pytest
... tests/jax_applications`); Keras picks its backend once per process,
so on the TensorFlow line they are skipped (the TensorFlow runs are
tested under `tests/applications`).
"""

import math

import numpy as np
import pytest

from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from tests.support import fresh_process
from tests.support import jax_runs

pytestmark = jax_runs.ONLY_ON_JAX

SAMPLING = {"sampling": "top_k", "top_k": 5, "temperature": 1.5}
# What the CLI run's export serves (an empty text too), and what the
# sampling export's `seeded` signature draws for, with which seeds.
TEXTS = [source for source, _ in make_synthetic_pairs(6, seed=7).pairs] + [""]
SAMPLED_TEXTS = [source for source, _ in make_synthetic_pairs(6, seed=3).pairs]
SEEDS = [11, 4, 2**32 - 3, 0, 8, 8]


@pytest.fixture(scope="module")
def translation_run(tmp_path_factory):
    """`(translator, export)` of the file's one JAX run, and the version
    folder of the same translator's export with `SAMPLING`."""
    translator, path, _ = jax_runs.train_once_on_jax(
        tmp_path_factory, "translation", "--distribution", "data-parallel"
    )
    # The run trained on both host devices (`tests/conftest.py`).
    assert len(translator.model.weights[0].value.sharding.device_set) == 2
    sampling = str(tmp_path_factory.mktemp("sampling") / "translation" / "1")
    translator.export(sampling, **SAMPLING)
    return translator, path, sampling


@pytest.fixture(scope="module")
def served(translation_run):
    """Both exports served by one process without Keras or the project."""
    _, path, sampling = translation_run
    return fresh_process.run_without_project(
        f"""
serve = tf.saved_model.load({path!r}).signatures["serving_default"]
out = serve(text=tf.constant({TEXTS!r}))
seeded = tf.saved_model.load({sampling!r}).signatures["seeded"]
drawn = seeded(text=tf.constant({SAMPLED_TEXTS!r}),
               seed=tf.constant({SEEDS!r}, tf.int64))
emit({{"translation": [t.decode() for t in out["translation"].numpy()],
       "attention": out["attention"].numpy().tolist(),
       "sampled": [t.decode() for t in drawn["translation"].numpy()]}})
"""
    )


def test_translation_trains_resumes_and_exports_on_jax(translation_run, served):
    translator, _, _ = translation_run
    expected, maps, scores = translator.translate(
        TEXTS, return_attention=True, return_scores=True
    )
    assert served["translation"] == expected
    attention = np.array(served["attention"])
    for row, weights in enumerate(maps[:-1]):
        steps, sources = weights.shape
        np.testing.assert_allclose(
            attention[row, :steps, :sources], weights, atol=1e-5
        )
    assert all(math.isfinite(score) for score in scores)


def test_jax_samples_equal_the_exported_seeded_signature(
    translation_run, served
):
    translator, _, _ = translation_run
    expected = translator.translate(SAMPLED_TEXTS, seed=SEEDS, **SAMPLING)
    assert (
        len(
            {
                tuple(translator.translate(SAMPLED_TEXTS, seed=s, **SAMPLING))
                for s in range(4)
            }
        )
        > 1
    )  # the samples depend on the seed
    assert served["sampled"] == expected
