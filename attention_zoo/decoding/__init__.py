"""Decoding: one `decode(adapter, inputs, ...)` for every generating model.

A model writes a `DecodingAdapter` (`encode`, `initial_state`, `step`);
`decode` runs greedy or beam search over it, compiled whole once per
configuration and input bucket. `greedy_search`, `beam_search` and
`tile_beams` are the searches themselves, for a bare `step_fn`.
"""

from attention_zoo.decoding.adapter import DecodingAdapter
from attention_zoo.decoding.beam_search import beam_search
from attention_zoo.decoding.beam_search import tile_beams
from attention_zoo.decoding.driver import decode
from attention_zoo.decoding.greedy_search import greedy_search

__all__ = [
    "DecodingAdapter",
    "beam_search",
    "decode",
    "greedy_search",
    "tile_beams",
]
