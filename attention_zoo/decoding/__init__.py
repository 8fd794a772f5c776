"""Greedy and beam search, each compiled whole as one loop."""

from attention_zoo.decoding.beam_search import beam_search
from attention_zoo.decoding.beam_search import tile_beams
from attention_zoo.decoding.greedy_search import greedy_search

__all__ = ["beam_search", "greedy_search", "tile_beams"]
