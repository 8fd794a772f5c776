"""Caption decoding with the shared compiled greedy and beam search.

`CaptionDecoder(model)` adapts a `build_captioner` model to the
`attention_zoo.decoding` contract: `encode(images)` runs the CNN once and
projects the attention keys once; `initial_state(memory)` gives `(h_0,
c_0)`; `step_fn(memory)` returns `step(token_ids, state, index) -> (logits,
state, attention)`, the decoder's own recurrence, so decoding the true
previous words reproduces the teacher-forced logits.
"""

import keras
from keras import ops

from attention_zoo.decoding import beam_search
from attention_zoo.decoding import greedy_search
from attention_zoo.decoding import tile_beams

START_ID, END_ID = 2, 3


class CaptionDecoder:
    """Step-by-step decoding of a `build_captioner` model.

    Memory keys: `"features"` `(N, L, D)`, `"mean"` `(N, D)` and, with
    attention, `"keys"`. Attention weights come back as `(N, L)`, row-major
    over the `H x W` feature map.
    """

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

    def step_fn(self, memory):
        def step(token_ids, state, index):
            return self.decoder.step(token_ids, state, memory)

        return step


def decode_captions(
    adapter, images, max_length, beam_size=1, length_penalty=0.0
):
    """Greedy (`beam_size=1`) or beam search from images `(B, S, S, 3)`.

    Returns the dict of `greedy_search` / `beam_search`: `tokens` `(B,
    max_length)`, `lengths`, `scores` and `attention` `(B, max_length, L)`.
    Compile the call whole (`tf.function(jit_compile=True)` / `jax.jit`).
    """
    memory = adapter.encode(images)
    state = adapter.initial_state(memory)
    if beam_size == 1:
        return greedy_search(
            adapter.step_fn(memory), state, START_ID, END_ID, max_length
        )
    return beam_search(
        adapter.step_fn(tile_beams(memory, beam_size)),
        state,
        START_ID,
        END_ID,
        max_length,
        beam_size=beam_size,
        length_penalty=length_penalty,
    )


def attention_maps(attention, grid):
    """`(B, T, L)` weights -> `(B, T, H, W)`."""
    height, width = grid
    shape = ops.shape(attention)
    return ops.reshape(attention, (shape[0], shape[1], height, width))
