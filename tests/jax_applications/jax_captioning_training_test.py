"""The captioner trained, resumed and exported on the JAX backend (see
jax_translation_training_test.py); the export serves the JAX model's
captions and attention for PNG bytes."""

import numpy as np

from tests.support import fresh_process
from tests.support import jax_runs
from tests.support import png_images

pytestmark = jax_runs.ONLY_ON_JAX


def test_captioning_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from attention_zoo_apps.captioning import synthetic

    captioner, path = jax_runs.train_on_jax(monkeypatch, tmp_path, "captioning")
    images, _ = synthetic.fit_arguments(3, seed=7, image_size=32)
    encoded, pixels = png_images.pngs_and_pixels(images)
    expected, maps, _ = captioner.caption(
        pixels, beam_size=1, return_attention=True
    )
    served = fresh_process.run_without_project(
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
