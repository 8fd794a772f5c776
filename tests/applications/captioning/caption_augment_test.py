"""Random crops and mirror images of the training images."""

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps.captioning import augment
from attention_zoo_apps.captioning.captioner import Captioner
from attention_zoo_apps.captioning.config import CaptioningConfig


def _bilinear_crop(image, box, size):
    """NumPy reference: sample `size x size` points evenly from the box's
    top-left to its bottom-right corner (pixel centres, `[0, 1]` spanning
    the first to the last pixel), bilinear between the four neighbours."""
    height, width, _ = image.shape
    y1, x1, y2, x2 = box
    ys = y1 * (height - 1) + np.arange(size) * (y2 - y1) * (height - 1) / (
        size - 1
    )
    xs = x1 * (width - 1) + np.arange(size) * (x2 - x1) * (width - 1) / (
        size - 1
    )
    out = np.zeros((size, size, image.shape[-1]))
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            top, left = int(np.floor(y)), int(np.floor(x))
            bottom, right = min(top + 1, height - 1), min(left + 1, width - 1)
            dy, dx = y - top, x - left
            upper = image[top, left] * (1 - dx) + image[top, right] * dx
            lower = image[bottom, left] * (1 - dx) + image[bottom, right] * dx
            out[i, j] = upper * (1 - dy) + lower * dy
    return out


def test_boxes_are_squares_of_at_least_min_crop_inside_the_image():
    boxes = augment.crop_boxes(2000, min_crop=0.8, seed=3).numpy()
    y1, x1, y2, x2 = boxes.T
    side = y2 - y1
    assert np.all(side >= 0.8 - 1e-6) and np.all(side <= 1 + 1e-6)
    np.testing.assert_allclose(np.abs(x2 - x1), side, atol=1e-6)
    assert boxes.min() >= 0 and boxes.max() <= 1 + 1e-6
    mirrored = np.mean(x1 > x2)
    assert 0.45 < mirrored < 0.55
    # Placed anywhere: both ends of the free range are used.
    assert y1.min() < 0.01 and y2.max() > 0.99


def test_min_crop_must_be_a_fraction():
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="min_crop"):
            augment.crop_boxes(2, min_crop=bad)


def test_crop_matches_a_numpy_bilinear_reference():
    rng = np.random.default_rng(0)
    images = rng.random((3, 9, 9, 3)).astype("float32")
    boxes = np.array(
        [[0, 0, 1, 1], [0, 1, 1, 0], [0.1, 0.55, 0.9, 0.05]], "float32"
    )
    cropped = augment.crop(tf.constant(images), tf.constant(boxes)).numpy()
    np.testing.assert_allclose(cropped[0], images[0], atol=1e-6)
    np.testing.assert_allclose(cropped[1], images[1][:, ::-1], atol=1e-6)
    np.testing.assert_allclose(
        cropped[2], _bilinear_crop(images[2], boxes[2], 9), atol=1e-5
    )


def test_each_image_gets_its_own_crop():
    rng = np.random.default_rng(1)
    image = rng.random((1, 16, 16, 3)).astype("float32")
    images = tf.constant(np.repeat(image, 8, axis=0))
    out = augment.random_crops(images, seed=0).numpy()
    assert out.shape == images.shape and out.dtype == np.float32
    # Interpolation stays within the pixels' range.
    assert out.min() >= image.min() - 1e-6 and out.max() <= image.max() + 1e-6
    different = {out[i].tobytes() for i in range(8)}
    assert len(different) == 8


def test_only_the_training_batches_are_augmented():
    rng = np.random.default_rng(2)
    images = rng.random((4, 16, 16, 3)).astype("float32")
    captions = ["a dog runs", "a cat sits", "two birds", "a red ball"]
    config = CaptioningConfig(
        image_size=16, vocabulary_size=60, max_length=6, augment=True
    )
    captioner = Captioner(config)
    captioner.ensure_tokenizer(captions)

    def first_batch(**kwargs):
        batches = captioner.dataset(images, captions, **kwargs)
        inputs, targets = next(iter(batches))
        return inputs["image"].numpy(), inputs["caption_in"].numpy(), targets

    plain, words, targets = first_batch()
    np.testing.assert_array_equal(plain, images)
    cropped, cropped_words, cropped_targets = first_batch(augment=True)
    assert cropped.shape == images.shape
    assert not np.allclose(cropped, images, atol=1e-3)
    np.testing.assert_array_equal(cropped_words, words)
    np.testing.assert_array_equal(cropped_targets, targets)
    assert CaptioningConfig.from_json(config.to_json()).augment is True
