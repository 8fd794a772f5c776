"""A captioning export with its encoder's batch normalizations folded into
the convolutions (`export(..., fold_batch_norms=True)`, `train captioning
--export-fold-batch-norms`) serves what the plain export serves and says
which it folded."""

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import read_metadata
from attention_zoo_apps.captioning.shapes import make_synthetic_shapes
from tests.support import png_images
from tests.support import tiny_bundles

# The tiny captioner's small CNN (32 px images): two blocks of two
# Conv2D -> BatchNormalization -> ReLU.
FOLDED = ["block0_norm0", "block0_norm1", "block1_norm0", "block1_norm1"]


@pytest.fixture(scope="module")
def folded_export(shared, tmp_path_factory):
    path = tmp_path_factory.mktemp("folded") / "captioning" / "1"
    captioner = tiny_bundles.tiny_bundle("captioning", shared)
    captioner.export(str(path), jit_compile=False, fold_batch_norms=True)
    return str(path)


def _serve(path, pngs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    return serve(image=tf.constant(pngs))


def test_folded_export_serves_the_plain_exports_captions(shared, folded_export):
    plain = tiny_bundles.tiny_export(shared, "captioning", jit_compile=False)
    images = make_synthetic_shapes(4, image_size=32, seed=7).images
    pngs, _ = png_images.pngs_and_pixels(images)
    expected, got = _serve(plain, pngs), _serve(folded_export, pngs)
    np.testing.assert_array_equal(
        got["tokens"].numpy(), expected["tokens"].numpy()
    )
    np.testing.assert_allclose(
        got["attention"].numpy(), expected["attention"].numpy(), atol=1e-4
    )
    folded = read_metadata(folded_export)["folded_batch_norms"]
    assert sorted(folded) == FOLDED
    assert "folded_batch_norms" not in read_metadata(plain)
