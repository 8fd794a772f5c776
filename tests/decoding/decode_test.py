"""`decode`: greedy or beam search over an adapter, bucketed and cached.

The toy adapter (`tests/support/toy_adapter.py`) reads "source" ids
`(B, Ts)`: every source token `s` adds its table `tables[s]` `(L, V, V)` to
the example's next-token logits (PAD adds nothing), so an example's logits
table is `counts @ tables` and the NumPy searches of `decoding_reference`
give the expected answers. Its attention is uniform over the real source
tokens.
"""

import logging

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.decoding import DecodingAdapter
from attention_zoo.decoding import beam_search
from attention_zoo.decoding import decode
from attention_zoo.decoding import greedy_search
from tests.support import decoding_reference
from tests.support.decoding_reference import END
from tests.support.decoding_reference import START
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy
from tests.support.toy_adapter import STEPS
from tests.support.toy_adapter import ToyAdapter
from tests.support.toy_adapter import decode_to_numpy
from tests.support.toy_adapter import example_tables
from tests.support.toy_adapter import make_adapter
from tests.support.toy_adapter import random_sources


@pytest.mark.parametrize("jit_compile", [True, False], ids=["xla", "eager"])
@pytest.mark.parametrize("beam_size", [1, 2, 3])
def test_matches_numpy_search(beam_size, jit_compile):
    adapter = make_adapter()
    sources = random_sources(3, 5)  # padded to (4, 8), cut back to (3, 5)
    out = decode_to_numpy(
        adapter,
        sources,
        beam_size=beam_size,
        length_penalty=0.6,
        jit_compile=jit_compile,
    )
    tables = example_tables(adapter, sources)
    if beam_size == 1:
        expected = decoding_reference.greedy(tables)
    else:
        expected = [
            b[0] for b in decoding_reference.beam_search(tables, beam_size, 0.6)
        ]
    tokens, scores, lengths, _ = zip(*expected)
    np.testing.assert_array_equal(out["tokens"], np.stack(tokens))
    np.testing.assert_array_equal(out["lengths"], lengths)
    np.testing.assert_allclose(out["scores"], scores, atol=1e-4)
    # Attention: cut back to the 5 source positions, uniform over the real
    # ones while a row is generating, zero after its END.
    assert out["attention"].shape == (3, STEPS, 5)
    real = (sources != 0) / (sources != 0).sum(1, keepdims=True)
    for row, length in enumerate(lengths):
        np.testing.assert_allclose(
            out["attention"][row, :length],
            np.broadcast_to(real[row], (length, 5)),
        )
        np.testing.assert_array_equal(out["attention"][row, length:], 0.0)


def test_beam_size_one_is_greedy_and_xla_agrees_with_eager():
    adapter = make_adapter(seed=1)
    sources = random_sources(5, 6, seed=1)
    greedy = decode_to_numpy(adapter, sources)
    for beam in (
        decode_to_numpy(adapter, sources, beam_size=1, length_penalty=0.6),
        decode_to_numpy(adapter, sources, jit_compile=False),
    ):
        for key in ("tokens", "lengths", "scores", "attention"):
            np.testing.assert_allclose(beam[key], greedy[key], atol=1e-5)
    # The same as the searches called directly on the unpadded batch.
    memory = adapter.encode(sources)
    state = adapter.initial_state(memory)
    direct = to_numpy(
        greedy_search(adapter.step_fn(memory), state, START, END, STEPS)
    )
    for key in ("tokens", "lengths", "scores", "attention"):
        np.testing.assert_allclose(direct[key], greedy[key], atol=1e-5)
    wide = decode_to_numpy(adapter, sources, beam_size=3, length_penalty=0.0)
    memory = keras.tree.map_structure(lambda x: ops.repeat(x, 3, 0), memory)
    direct = to_numpy(
        beam_search(adapter.step_fn(memory), state, START, END, STEPS, 3, 0.0)
    )
    np.testing.assert_array_equal(wide["beam_tokens"], direct["beam_tokens"])
    assert wide["beam_tokens"].shape == (5, 3, STEPS)


def test_bucket_padding_changes_no_row():
    adapter = make_adapter(seed=2)
    sources = random_sources(6, 11, seed=2)  # padded to (8, 16)
    together = decode_to_numpy(adapter, sources, beam_size=2)
    assert together["tokens"].shape == (6, STEPS)
    assert together["attention"].shape == (6, STEPS, 11)
    for row in range(6):
        alone = decode_to_numpy(adapter, sources[row : row + 1], beam_size=2)
        for key in ("tokens", "lengths", "scores", "attention"):
            np.testing.assert_allclose(
                together[key][row], alone[key][0], atol=1e-5
            )


def test_without_length_multiple_only_the_batch_is_padded():
    adapter = make_adapter(length_multiple=None)
    out = decode_to_numpy(adapter, random_sources(3, 5))
    assert out["attention"].shape == (3, STEPS, 5)
    assert adapter.encoded == [(4, 5)]


def test_compiles_once_per_configuration_and_bucket(caplog):
    adapter = make_adapter()
    shapes = [(b, t) for b in (1, 3, 4, 5) for t in (1, 7, 9)]
    with caplog.at_level(logging.WARNING):
        for _ in range(2):  # the second pass compiles nothing
            for batch, length in shapes:
                decode_to_numpy(adapter, random_sources(batch, length))
        # Batches 1, 4, 8 and lengths 8, 16: six buckets, traced once each.
        assert sorted(adapter.encoded) == [
            (b, t) for b in (1, 4, 8) for t in (8, 16)
        ]
        # A new configuration, then one in the same bucket.
        decode_to_numpy(adapter, random_sources(3, 5), beam_size=2)
        decode_to_numpy(adapter, random_sources(4, 7), beam_size=2)
        assert len(adapter.encoded) == 7
    # TensorFlow warns "N out of the last M calls ... triggered tf.function
    # retracing" when one function is traced for many shapes.
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]


def test_an_empty_batch_gives_empty_results():
    out = decode_to_numpy(
        make_adapter(), np.zeros((0, 5), "int32"), beam_size=2
    )
    assert out["tokens"].shape == (0, STEPS)
    assert out["attention"].shape == (0, STEPS, 5)


def test_finalize_sees_the_callers_inputs():
    class Finalizing(ToyAdapter):
        def finalize(self, result, source_ids):
            return {**result, "source_shape": tuple(source_ids.shape)}

    adapter = Finalizing(make_adapter().tables)
    out = decode(
        adapter, random_sources(3, 5), start_id=START, end_id=END, max_length=2
    )
    assert out["source_shape"] == (3, 5)


def test_works_inside_the_backends_compiler():
    adapter = make_adapter(seed=3)
    sources = random_sources(3, 5, seed=3)
    expected = decode_to_numpy(adapter, sources, beam_size=2)

    def tokens(sources):
        result = decode(
            adapter,
            sources,
            start_id=START,
            end_id=END,
            max_length=STEPS,
            beam_size=2,
        )
        return result["tokens"], result["attention"]

    out = to_numpy(jit(tokens)(sources))
    np.testing.assert_array_equal(out[0], expected["tokens"])
    np.testing.assert_allclose(out[1], expected["attention"], atol=1e-6)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="unknown shapes exist only in TensorFlow graphs",
)
def test_works_inside_a_tf_function_with_unknown_shapes():
    import tensorflow as tf

    adapter = make_adapter(seed=4)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def serve(sources):
        result = decode(
            adapter, sources, start_id=START, end_id=END, max_length=STEPS
        )
        return result["tokens"], result["lengths"], result["attention"]

    for batch, length in [(3, 5), (0, 2)]:
        sources = random_sources(max(batch, 1), length, seed=batch)[:batch]
        tokens, lengths, attention = to_numpy(serve(sources))
        expected = decode_to_numpy(adapter, sources)
        np.testing.assert_array_equal(tokens, expected["tokens"])
        np.testing.assert_array_equal(lengths, expected["lengths"])
        np.testing.assert_allclose(attention, expected["attention"])
        assert attention.shape == (batch, STEPS, length)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"beam_size": 0}, "beam_size"),
        ({"max_length": 0}, "max_length"),
        ({"length_penalty": -1.0}, "length_penalty"),
    ],
)
def test_invalid_arguments_raise(kwargs, argument):
    arguments = {"start_id": START, "end_id": END, "max_length": STEPS}
    with pytest.raises(ValueError, match=argument):
        decode(make_adapter(), random_sources(2, 3), **{**arguments, **kwargs})
    with pytest.raises(ValueError, match="inputs"):
        decode(make_adapter(), {}, **arguments)


def test_the_base_adapter_names_what_is_missing():
    with pytest.raises(NotImplementedError, match="encode"):
        decode(
            DecodingAdapter(),
            random_sources(2, 3),
            start_id=START,
            end_id=END,
            max_length=2,
        )
