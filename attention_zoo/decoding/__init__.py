"""Decoding: one `decode(adapter, inputs, ...)` for every generating model.

A model writes a `DecodingAdapter` (`encode`, `initial_state`, `step`);
`decode` runs greedy search, beam search (length and coverage penalties,
n-best) or sampling (temperature, top-k, top-p) over it, compiled whole
once per configuration and input bucket. `greedy_search`, `beam_search`,
`sample_search` and `tile_beams` are the searches themselves, for a bare
`step_fn`; `top_k_logits`, `top_p_logits` and `top_p_mask` are the
samplers' cuts.
"""

from attention_zoo.decoding.adapter import DecodingAdapter
from attention_zoo.decoding.beam_search import beam_search
from attention_zoo.decoding.beam_search import tile_beams
from attention_zoo.decoding.driver import decode
from attention_zoo.decoding.greedy_search import greedy_search
from attention_zoo.decoding.sampling import sample_search
from attention_zoo.decoding.sampling import top_k_logits
from attention_zoo.decoding.sampling import top_p_logits
from attention_zoo.decoding.sampling import top_p_mask

__all__ = [
    "DecodingAdapter",
    "beam_search",
    "decode",
    "greedy_search",
    "sample_search",
    "tile_beams",
    "top_k_logits",
    "top_p_logits",
    "top_p_mask",
]
