"""`DecodingAdapter.compile_encode = False`: with `jit_compile`, `decode`
runs `encode` as a graph function and XLA-compiles the search from its
memory on (TensorFlow; JAX runs every op with XLA, so the search stays
whole there). The results are the whole search's."""

import keras
import numpy as np
import pytest

from tests.support import decoding_reference
from tests.support.toy_adapter import decode_to_numpy
from tests.support.toy_adapter import example_tables
from tests.support.toy_adapter import make_adapter
from tests.support.toy_adapter import random_sources

SEARCHES = [
    dict(),
    dict(beam_size=3, length_penalty=0.6),
    dict(sampling="top_k", top_k=3, seed=7),
]


def _outside(adapter):
    adapter.compile_encode = False
    return adapter


@pytest.mark.parametrize("search", SEARCHES, ids=["greedy", "beam", "top_k"])
def test_the_results_are_the_whole_searchs(search):
    sources = random_sources(3, 5, seed=2)
    whole = decode_to_numpy(make_adapter(seed=2), sources, **search)
    split = decode_to_numpy(_outside(make_adapter(seed=2)), sources, **search)
    assert set(split) == set(whole)
    for key, value in whole.items():
        np.testing.assert_allclose(split[key], value, atol=1e-5, err_msg=key)
    if not search:  # and greedy's are the NumPy reference's
        expected = decoding_reference.greedy(
            example_tables(make_adapter(seed=2), sources)
        )
        np.testing.assert_array_equal(
            split["tokens"], np.stack([row[0] for row in expected])
        )


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="a graph function exists on TensorFlow only (JAX runs every op "
    "with XLA)",
)
def test_an_encoder_xla_cannot_compile_runs_outside_it():
    import tensorflow as tf  # lazy: TensorFlow's string ops, this test only

    class Stringy(type(make_adapter())):
        """Encodes through a string round trip: no XLA kernel."""

        def encode(self, source_ids):
            text = tf.strings.as_string(source_ids)
            return super().encode(tf.strings.to_number(text, tf.int32))

    sources = random_sources(2, 4, seed=3)
    adapter = Stringy(make_adapter(seed=3).tables)
    with pytest.raises(Exception, match="XLA|[Cc]ompil|kernel"):
        decode_to_numpy(adapter, sources)  # the whole search: XLA
    out = decode_to_numpy(_outside(Stringy(adapter.tables)), sources)
    expected = decoding_reference.greedy(example_tables(adapter, sources))
    np.testing.assert_array_equal(
        out["tokens"], np.stack([row[0] for row in expected])
    )
