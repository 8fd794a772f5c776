"""PNG bytes of generated float images, as the image tests send them to an
export, and the pixels the export decodes from them."""

import numpy as np
import tensorflow as tf


def png(image):
    """PNG bytes of a float image in [0, 1] (8 bits, truncated)."""
    return tf.io.encode_png(tf.cast(np.asarray(image) * 255, tf.uint8)).numpy()


def pngs_and_pixels(images):
    """`(pngs, pixels)`: a PNG of each image, and the float32 pixels an
    export decodes from them (the 8-bit values, back in [0, 1])."""
    pngs = [png(image) for image in images]
    pixels = np.stack([tf.io.decode_png(data).numpy() for data in pngs])
    return pngs, pixels.astype("float32") / 255.0
