"""Decoding: one `decode(adapter, inputs, search)` for every generating model.

A model writes a `DecodingAdapter` (`encode`, `initial_state`, `step`);
`decode` runs a search over it, compiled whole once per configuration and
input bucket. A search is one object (`searches`): `Greedy()`,
`BeamSearch(beam_size, length_penalty, coverage_penalty, num_results)`
(GNMT's penalties, n-best) or `Sampling(strategy, temperature, top_k,
top_p)`, or a name `searches.get` knows (`"greedy"`, `"beam"`,
`"top_k"`, `"top_p"`, ...); the loose keyword arguments (`beam_size=4,
length_penalty=0.6`; `sampling="top_p", top_p=0.9`) are its aliases.
`greedy_search`, `beam_search`, `sample_search` and `tile_beams` are the
searches' loops, for a bare `step_fn`; `top_k_logits`, `top_p_logits`
and `top_p_mask` are the samplers' cuts.
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
from attention_zoo.decoding.searches import BeamSearch
from attention_zoo.decoding.searches import Greedy
from attention_zoo.decoding.searches import Sampling

__all__ = [
    "BeamSearch",
    "DecodingAdapter",
    "Greedy",
    "Sampling",
    "beam_search",
    "decode",
    "greedy_search",
    "sample_search",
    "tile_beams",
    "top_k_logits",
    "top_p_logits",
    "top_p_mask",
]
