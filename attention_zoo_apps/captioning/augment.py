"""Random crops and mirror images of training photographs (in `tf.data`).

With a few hundred training images a CNN trained from scratch memorises
them within a few epochs; showing each caption with a slightly different
crop, sometimes mirrored, is the usual remedy. Both happen in one
`tf.image.crop_and_resize` per batch: a box per image, whose left and right
edges are swapped to mirror it. Training only: evaluation, decoding and the
SavedModel see the whole image.

Mirroring turns left into right, so it is for photographs whose captions
rarely say which side a thing is on (Flickr8k, COCO), not for the generated
shapes, whose captions do.
"""

import tensorflow as tf

# Each side of the crop is this fraction of the image's side, or more.
MIN_CROP = 0.8


def crop_boxes(batch_size, min_crop=MIN_CROP, seed=None):
    """Random boxes `(B, 4)` as `crop_and_resize` takes them: `[y1, x1, y2,
    x2]` in `[0, 1]`, a square of side `min_crop`..1 placed uniformly
    inside the image, mirrored (x1 > x2) with probability 1/2."""
    if not 0.0 < min_crop <= 1.0:
        raise ValueError(
            f"`min_crop` must be in (0, 1]. Received: min_crop={min_crop}"
        )
    uniform = tf.random.uniform((batch_size, 4), seed=seed)
    side = min_crop + (1.0 - min_crop) * uniform[:, 0]
    top = (1.0 - side) * uniform[:, 1]
    left = (1.0 - side) * uniform[:, 2]
    boxes = tf.stack([top, left, top + side, left + side], axis=1)
    mirror = uniform[:, 3] < 0.5
    return tf.where(
        mirror[:, None], tf.gather(boxes, [0, 3, 2, 1], axis=1), boxes
    )


def crop(images, boxes):
    """`images` `(B, S, S, 3)` cut to `boxes` `(B, 4)` and resized back to
    `S x S` (bilinear), one box per image."""
    size = tf.shape(images)[1:3]
    index = tf.range(tf.shape(images)[0])
    cropped = tf.image.crop_and_resize(images, boxes, index, size)
    return tf.cast(cropped, images.dtype)


def random_crops(images, min_crop=MIN_CROP, seed=None):
    """Each image of the batch cut to its own random square of side
    `min_crop`..1, mirrored half of the time, at the same size."""
    return crop(images, crop_boxes(tf.shape(images)[0], min_crop, seed))
