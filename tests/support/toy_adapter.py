"""The toy `DecodingAdapter` of the `decode` tests, with a known answer.

It reads "source" ids `(B, Ts)`: every source token `s` adds its table
`tables[s]` `(L, V, V)` to the example's next-token logits (PAD adds
nothing), so an example's logits table is `counts @ tables`
(`example_tables`) and the NumPy searches of `decoding_reference` give
the expected answers. Its attention is uniform over the real source
tokens.
"""

import numpy as np
from keras import ops

from attention_zoo.decoding import DecodingAdapter
from attention_zoo.decoding import decode
from tests.support.decoding_reference import END
from tests.support.decoding_reference import START
from tests.support.layer_checks import to_numpy

SOURCES, STEPS, VOCABULARY = 7, 4, 6  # source ids, max_length, targets


class ToyAdapter(DecodingAdapter):
    def __init__(self, tables, length_multiple=8):
        self.tables = np.asarray(tables, "float32")  # (S, L, V, V)
        self.tables[0] = 0.0  # PAD adds nothing
        self.length_multiple = length_multiple
        self.encoded = []  # the shapes `encode` saw: one per trace

    def encode(self, source_ids):
        self.encoded.append(tuple(source_ids.shape))
        counts = ops.sum(ops.one_hot(source_ids, SOURCES), axis=1)  # (B, S)
        tables = ops.einsum("bs,slvw->blvw", counts, self.tables)
        mask = ops.cast(ops.not_equal(source_ids, 0), "float32")  # (B, Ts)
        return {
            "tables": ops.reshape(tables, (-1, STEPS * VOCABULARY, VOCABULARY)),
            "weights": mask / ops.maximum(ops.sum(mask, 1, keepdims=True), 1),
        }

    def initial_state(self, memory):
        return ops.zeros(ops.shape(memory["weights"])[:1], "int32")

    def step(self, token_ids, count, memory, index):
        row = ops.minimum(count, STEPS - 1) * VOCABULARY + token_ids  # (N,)
        logits = ops.take_along_axis(
            memory["tables"], row[:, None, None], axis=1
        )[:, 0]  # (N, V)
        return logits, count + 1, memory["weights"]


def make_adapter(seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    shape = (SOURCES, STEPS, VOCABULARY, VOCABULARY)
    return ToyAdapter(rng.normal(size=shape) * 2.0, **kwargs)


def random_sources(batch, length, seed=0):
    """Random source ids `(batch, length)` with PAD after a random end."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, SOURCES, size=(batch, length)).astype("int32")
    ends = rng.integers(1, length + 1, size=(batch, 1))
    return np.where(np.arange(length) < ends, ids, 0).astype("int32")


def decode_to_numpy(adapter, sources, **kwargs):
    kwargs = {"start_id": START, "end_id": END, "max_length": STEPS, **kwargs}
    return to_numpy(decode(adapter, sources, **kwargs))


def example_tables(adapter, sources):
    """The toy model's logits tables per example, `(B, L, V, V)`."""
    counts = np.stack([np.bincount(row, minlength=SOURCES) for row in sources])
    return np.einsum("bs,slvw->blvw", counts, adapter.tables)
