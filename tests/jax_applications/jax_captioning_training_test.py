"""The captioner trained, resumed and exported on the JAX backend (see
jax_training_test.py); the export serves the JAX model's captions and
attention for PNG bytes."""

import io

import numpy as np
from PIL import Image

from tests import export_testing
from tests.jax_applications import jax_runs

pytestmark = jax_runs.ONLY_ON_JAX


def _png(image):
    """PNG bytes of a float image in [0, 1]."""
    buffer = io.BytesIO()
    Image.fromarray(np.round(image * 255).astype("uint8")).save(
        buffer, format="PNG"
    )
    return buffer.getvalue()


def test_captioning_trains_resumes_and_exports_on_jax(monkeypatch, tmp_path):
    from applications.captioning import synthetic

    captioner, path = jax_runs.train_on_jax(monkeypatch, tmp_path, "captioning")
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
