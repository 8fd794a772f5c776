"""`CaptionAdapter`: a `build_captioner` model as a `DecodingAdapter`.

`encode(images)` runs the CNN once and projects the attention keys once;
`initial_state(memory)` gives `(h_0, c_0)`; `step(token_ids, state, memory,
index)` is the decoder's own recurrence, so decoding the true previous
words reproduces the teacher-forced logits. `attention_zoo.decoding.decode`
runs greedy or beam search over it; `finalize` gives the attention weights
back as one heatmap `(H, W)` per word.
"""

import keras
from keras import ops

from attention_zoo.decoding import DecodingAdapter


class CaptionAdapter(DecodingAdapter):
    """Step-by-step decoding of a `build_captioner` model.

    `decode(CaptionAdapter(model), images, ...)` takes float images
    `(B, S, S, 3)` and returns attention maps `(B, L, H, W)` over the
    `grid = (H, W)` feature map. Memory keys: `"features"` `(N, P, D)`
    with `P = H * W` positions, `"mean"` `(N, D)` and, with attention,
    `"keys"`; a step's attention weights are `(N, P)`, row-major over the
    feature map.
    """

    # The image encoder (a CNN) runs as a graph function and only the
    # search is XLA-compiled: XLA:CPU's convolutions are several times
    # slower than oneDNN's (`DecodingAdapter`).
    compile_encode = False

    def __init__(self, model):
        self.model = model
        self.decoder = model.get_layer("decoder")
        annotations = model.get_layer("annotations")
        self.grid = tuple(annotations.input.shape[1:3])
        self._encoder = keras.Model(
            model.get_layer("image").output, annotations.output, name="encoder"
        )

    def encode(self, images):
        features = self._encoder(images, training=False)
        return self.decoder.prepare(features)

    def initial_state(self, memory):
        return self.decoder.initial_state(memory)

    def step(self, token_ids, state, memory, index):
        return self.decoder.step(token_ids, state, memory)

    def finalize(self, result, images):
        """The attention weights (and beam search's `beam_attention`) as
        heatmaps over the grid."""
        return {
            key: attention_maps(value, self.grid)
            if key in ("attention", "beam_attention")
            else value
            for key, value in result.items()
        }


def attention_maps(attention, grid):
    """`(..., H * W)` weights -> `(..., H, W)`: `(B, T, H, W)`, or
    `(B, K, T, H, W)` for the beams."""
    shape = tuple(ops.shape(attention))
    return ops.reshape(attention, shape[:-1] + tuple(grid))
