"""`export_captioning`: a SavedModel from encoded image bytes to captions."""

import os

import tensorflow as tf

from applications.captioning.data import decode_image_bytes
from attention_zoo.export import atomic_directory


class CaptioningServingModule(tf.Module):
    """Image decoding, model weights and the compiled decoder in one module.

    `serve(image)`: tf.string `(B,)` of encoded JPEG / PNG bytes ->
    `caption` tf.string `(B,)`, `attention` float32 `(B, max_length, H,
    W)` (one heatmap per generated token, zeros after END) and `tokens`
    tf.string `(B, max_length)` (the generated WordPiece tokens, `[END]`
    included, empty strings after it: the words the heatmaps belong to).
    """

    def __init__(self, captioner, beam_size=3, length_penalty=0.0):
        super().__init__(name="captioning")
        self.tokenizer = captioner.tokenizer
        self.model = captioner.model
        self._size = captioner.config.image_size
        self._decode = captioner.decode_function(beam_size, length_penalty)
        self._vocabulary = tf.constant(captioner.tokenizer.vocabulary)

    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string, name="image")]
    )
    def serve(self, image):
        size = self._size
        pixels = tf.map_fn(
            lambda data: decode_image_bytes(data, size),
            image,
            fn_output_signature=tf.TensorSpec([size, size, 3], tf.float32),
        )
        result = self._decode(pixels)
        ids = result["tokens"]  # (B, max_length)
        steps = tf.range(tf.shape(ids)[1])[tf.newaxis, :]
        generated = steps < result["lengths"][:, tf.newaxis]
        return {
            "caption": self.tokenizer.detokenize(ids),
            "attention": tf.cast(result["attention"], tf.float32),
            "tokens": tf.where(generated, tf.gather(self._vocabulary, ids), ""),
        }


def export_captioning(captioner, path, beam_size=3, length_penalty=0.0):
    """Writes `captioner` as a SavedModel to `path`, atomically.

    The `serving_default` signature takes `image` (tf.string `[None]`,
    encoded JPEG or PNG bytes) and returns `caption` (tf.string `[None]`),
    `attention` (float32 `[None, max_length, H, W]`) and `tokens`
    (tf.string `[None, max_length]`, the token each heatmap belongs to,
    `[END]` included, `""` after it). Image decoding, resizing and
    detokenization run inside the graph; the search is compiled with XLA.
    Loading needs TensorFlow and TensorFlow Text's ops (for the
    detokenizer's vocabulary lookups only core ops are used, but the
    tokenizer module is saved along). Corrupt bytes give an
    `InvalidArgumentError` from the image decoder.

    Returns:
        `path`.
    """
    if captioner.model is None:
        raise ValueError("The captioner has no model: call `fit` first.")
    module = CaptioningServingModule(captioner, beam_size, length_penalty)
    with atomic_directory(path) as temporary:
        tf.saved_model.save(
            module, temporary, signatures={"serving_default": module.serve}
        )
        with open(os.path.join(temporary, "config.json"), "w") as f:
            f.write(captioner.config.to_json())
    return path
