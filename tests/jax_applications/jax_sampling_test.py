"""Sampling draws alike on JAX and in the TensorFlow export: a translator
trained on JAX, exported with sampling (written by a TensorFlow process,
`applications.common.backend_export`), serves through `seeded` the
translations JAX samples in process with the same seeds (the noise is a
hash of seed, step and token id, computed bit for bit alike by both
backends)."""

from applications import registry
from applications.translation.synthetic import make_synthetic_pairs
from applications.translation.translator import Translator
from tests.support import fresh_process
from tests.support import jax_runs

pytestmark = jax_runs.ONLY_ON_JAX

SAMPLING = {"sampling": "top_k", "top_k": 5, "temperature": 1.5}


def test_jax_samples_equal_the_exported_seeded_signature(tmp_path):
    pairs = make_synthetic_pairs(300, seed=0).pairs
    translator = Translator(registry.get("translation").tiny_config())
    translator.fit(pairs[:256], pairs[256:], verbose=0)
    texts = [source for source, _ in make_synthetic_pairs(6, seed=3).pairs]
    seeds = [11, 4, 2**32 - 3, 0, 8, 8]
    expected = translator.translate(texts, seed=seeds, **SAMPLING)
    assert (
        len(
            {
                tuple(translator.translate(texts, seed=s, **SAMPLING))
                for s in range(4)
            }
        )
        > 1
    )  # the samples depend on the seed
    path = str(tmp_path / "translation" / "1")
    translator.export(path, **SAMPLING)
    served = fresh_process.run_without_project(
        f"""
seeded = tf.saved_model.load({path!r}).signatures["seeded"]
out = seeded(text=tf.constant({texts!r}), seed=tf.constant({seeds!r}, tf.int64))
emit([t.decode() for t in out["translation"].numpy()])
"""
    )
    assert served == expected
