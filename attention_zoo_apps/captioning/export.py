"""`CaptioningServingModule`, the SavedModel `Captioner.export` writes (from
encoded image bytes to captions), and `warmup_inputs`, the request that
warms it up in TF Serving."""

import numpy as np
import tensorflow as tf

from attention_zoo_apps.captioning.images import decode_image_bytes
from attention_zoo_apps.common.search_serving import SearchServingModule
from attention_zoo_apps.common.search_serving import best_hypothesis
from attention_zoo_apps.common.search_serving import n_best_outputs
from attention_zoo_apps.common.token_ids import END_ID

# The side of the warm-up request's image (the export resizes any size).
WARMUP_IMAGE_SIZE = 64


IMAGE_SPEC = tf.TensorSpec([None], tf.string, name="image")


class CaptioningServingModule(SearchServingModule):
    """Image decoding, model weights and the decoder in one module.

    `serve(image)`: tf.string `(B,)` of encoded JPEG / PNG bytes ->
    `caption` tf.string `(B,)`, `attention` float32 `(B, max_length, H,
    W)` (one heatmap per generated token, zeros after END) and `tokens`
    tf.string `(B, max_length)` (the generated WordPiece tokens, `[END]`
    included, empty strings after it: the words the heatmaps belong to)
    and `truncated` bool `(B,)`: the caption reached `max_length` tokens
    without `[END]`, so it was cut (the model card's `caption_tokens`).
    Undecodable bytes fail the call naming `image` (see `_pixels`). The
    search is `Captioner.decode` (`attention_zoo.decoding.decode`),
    XLA-compiled when `jit_compile`, with the `search` (or its loose
    `options`) given here (see `SearchServingModule`). With
    `num_results = N > 1` (at most the beam size) it also returns
    `captions` tf.string `(B, N)` and `scores` float32 `(B, N)`: the
    beam's `N` best, best first; the other outputs are the best one's.
    With a search that samples it also returns `seed` int64 `(B,)`, and
    `seeded(image, seed)` draws with the given seeds.
    """

    def __init__(self, captioner, search=None, jit_compile=True, **options):
        super().__init__(
            "captioning",
            captioner,
            IMAGE_SPEC,
            jit_compile=jit_compile,
            search=search,
            **options,
        )
        self.tokenizer = captioner.tokenizer
        self.track_model(captioner.model)
        self._size = captioner.config.image_size
        self._vocabulary = tf.constant(captioner.tokenizer.vocabulary)

    @tf.function(input_signature=[IMAGE_SPEC], autograph=False)
    def serve(self, image):
        return self.search_outputs(image)

    def outputs(self, image, seed):
        results = self.decode(self._pixels(image), seed)
        result = best_hypothesis(results, self.num_results)
        ids = result["tokens"]  # (B, max_length)
        steps = tf.range(tf.shape(ids)[1])[tf.newaxis, :]
        generated = steps < result["lengths"][:, tf.newaxis]
        outputs = {
            "caption": self.tokenizer.detokenize(ids),
            "attention": tf.cast(result["attention"], tf.float32),
            "tokens": tf.where(generated, tf.gather(self._vocabulary, ids), ""),
            # No END among the generated tokens: cut at `max_length`.
            "truncated": ~tf.reduce_any(generated & (ids == END_ID), axis=1),
        }
        if self.num_results > 1:
            outputs.update(
                n_best_outputs(results, self.tokenizer.detokenize, "captions")
            )
        return outputs

    def _pixels(self, image):
        """Encoded images `(B,)` -> float32 `(B, S, S, 3)`, or an
        `InvalidArgumentError` naming `image` and the batch positions of
        every entry that does not decode (empty, truncated, corrupt or not
        an image).

        A `tf.data` pipeline, so that a failed decode is skipped
        (`ignore_errors`) rather than ending the call with the decoder's
        own message; the positions that went missing are then reported.
        """
        size = self._size
        count = tf.shape(image)[0]
        decoded = (
            tf.data.Dataset.from_tensor_slices((tf.range(count), image))
            .map(
                tf.autograph.experimental.do_not_convert(
                    lambda i, data: (i, decode_image_bytes(data, size))
                )
            )
            .ignore_errors()
            .batch(tf.cast(tf.maximum(count, 1), tf.int64))
        )
        # No element when nothing decoded (or B = 0): empty tensors then.
        nothing = tf.data.Dataset.from_tensors(
            (tf.zeros([0], tf.int32), tf.zeros([0, size, size, 3]))
        )
        positions, pixels = (
            decoded.concatenate(nothing).take(1).get_single_element()
        )
        found = tf.scatter_nd(
            positions[:, None], tf.ones_like(positions), count[None]
        )  # (B,): 1 where decoded
        failed = tf.where(found == 0)[:, 0]
        check = tf.debugging.Assert(
            tf.size(failed) == 0,
            [
                "`image`: the entries at these batch positions are not a "
                "decodable JPEG, PNG, GIF, BMP or WebP image (empty, "
                "truncated or corrupt bytes):",
                failed,
            ],
            summarize=16,
        )
        with tf.control_dependencies([check]):
            return tf.identity(pixels)


def warmup_inputs(captioner):
    """`serving_default` inputs that warm the export up: one `image`
    (batch 1), a small generated JPEG (a colour gradient,
    `WARMUP_IMAGE_SIZE` pixels a side). Every image is decoded and resized
    to `image_size` in the graph and every caption is searched for
    `max_length` steps, so one image meets the export's only shape for a
    batch of one."""
    del captioner  # every captioner's export takes the same image
    ramp = np.linspace(0, 255, WARMUP_IMAGE_SIZE, dtype="float32")
    red, green = np.meshgrid(ramp, ramp)
    pixels = np.stack([red, green, np.full_like(red, 128.0)], axis=-1)
    jpeg = tf.io.encode_jpeg(tf.constant(pixels.astype("uint8")))
    return [{"image": np.array([jpeg.numpy()], dtype=object)}]
