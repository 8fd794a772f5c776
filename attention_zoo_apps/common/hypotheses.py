"""A decoding result read per input: the one or `num_results` best
hypotheses of each, as `Translator.translate` and `Captioner.caption`
return them."""

import numpy as np


def hypothesis_arrays(result, num_results):
    """`decode`'s result as NumPy arrays with a hypothesis axis `N`:
    `tokens` `(B, N, L)`, `lengths` `(B, N)`, `scores` `(B, N)` and
    `attention` `(B, N, L, ...)` (`N = 1` adds the axis)."""
    keys = ("tokens", "lengths", "scores", "attention")
    arrays = {key: np.asarray(result[key]) for key in keys}
    if num_results == 1:
        arrays = {key: value[:, None] for key, value in arrays.items()}
    return arrays


def per_input(values, num_results):
    """`B * N` values, input-major -> `B` lists of `N` (best first), or
    the `B` values themselves when `N = 1`."""
    values = list(values)
    if num_results == 1:
        return values
    return [
        values[start : start + num_results]
        for start in range(0, len(values), num_results)
    ]


def return_value(first, *extras):
    """`first` alone, or the tuple `(first, *extras)` when there are
    extras (`return_attention`, `return_scores`)."""
    return (first, *extras) if extras else first
