import keras
import numpy as np
import pytest

from attention_zoo.decoding import beam_search
from attention_zoo.decoding import greedy_search
from attention_zoo.decoding import tile_beams
from attention_zoo.decoding.beam_search import coverage_log
from tests.support import decoding_reference
from tests.support.decoding_reference import END
from tests.support.decoding_reference import PAD
from tests.support.decoding_reference import START
from tests.support.decoding_reference import FakeModel
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy


def run_beam(model, beam_size, length_penalty, compiled=False, **kwargs):
    def decode(state):
        return beam_search(
            model.step_fn(beam_size),
            state,
            START,
            END,
            model.max_length,
            beam_size=beam_size,
            length_penalty=length_penalty,
            **kwargs,
        )

    if compiled:
        decode = jit(decode)
    return to_numpy(decode(model.initial_state()))


def test_tile_beams_repeats_rows_in_order():
    x = np.arange(6, dtype="float32").reshape(3, 2)
    tiled = to_numpy(tile_beams({"a": x, "b": (x[:, 0],)}, 2))
    np.testing.assert_array_equal(tiled["a"], x[[0, 0, 1, 1, 2, 2]])
    np.testing.assert_array_equal(tiled["b"][0], x[[0, 0, 1, 1, 2, 2], 0])


@pytest.mark.parametrize("length_penalty", [0.0, 0.6])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_beam_size_one_equals_greedy(length_penalty, compiled):
    tables = decoding_reference.random_tables(3, 5, 6, seed=1, scale=1.0)
    tables[0, 2, :, END] = 5.0  # one example ends early
    model = FakeModel(tables)
    beam = run_beam(model, 1, length_penalty, compiled=compiled)

    def decode(state):
        return greedy_search(model.step_fn(), state, START, END, 5)

    if compiled:
        decode = jit(decode)
    greedy = to_numpy(decode(model.initial_state()))
    for key in ("tokens", "lengths", "scores", "attention"):
        np.testing.assert_array_equal(beam[key], greedy[key], err_msg=key)


@pytest.mark.parametrize("beam_size", [2, 3])
@pytest.mark.parametrize("length_penalty", [0.0, 0.6])
def test_matches_numpy_beam_search(beam_size, length_penalty):
    tables = decoding_reference.random_tables(2, 4, 6, seed=2, scale=1.5)
    tables[..., END] += 1.0  # some beams finish before max_length
    out = run_beam(FakeModel(tables), beam_size, length_penalty)
    expected = decoding_reference.beam_search(tables, beam_size, length_penalty)
    for b, beams in enumerate(expected):
        tokens, scores, lengths, attention = zip(*beams)
        np.testing.assert_array_equal(out["beam_tokens"][b], np.stack(tokens))
        np.testing.assert_array_equal(out["beam_lengths"][b], lengths)
        np.testing.assert_allclose(out["beam_scores"][b], scores, atol=1e-5)
        normalized = decoding_reference.normalize(
            np.array(scores), np.array(lengths), length_penalty
        )
        np.testing.assert_allclose(
            out["beam_normalized_scores"][b], normalized, atol=1e-5
        )
        # The best beam's attention history follows its path (one-hot of
        # the previous token, path code, counter check), zeros after END.
        np.testing.assert_allclose(out["attention"][b], attention[0])
    assert (out["lengths"] < 4).any()  # END handling was exercised
    np.testing.assert_array_equal(out["tokens"], out["beam_tokens"][:, 0])
    np.testing.assert_array_equal(out["scores"], out["beam_scores"][:, 0])


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_large_beam_finds_best_sequence(length_penalty):
    # 6 ** 3 = 216 sequences: a beam of 216 keeps every prefix.
    tables = decoding_reference.random_tables(2, 3, 6, seed=3, scale=1.5)
    out = run_beam(FakeModel(tables), 216, length_penalty)
    best = decoding_reference.brute_force_best(tables, length_penalty)
    tokens, scores, lengths, attention = zip(*best)
    np.testing.assert_array_equal(out["tokens"], np.stack(tokens))
    np.testing.assert_array_equal(out["lengths"], lengths)
    np.testing.assert_allclose(out["scores"], scores, atol=1e-5)
    np.testing.assert_allclose(out["attention"], np.stack(attention))
    assert np.isfinite(out["beam_scores"]).all()


def test_beats_greedy_on_crafted_case():
    # From START: token 4 (p ~ 0.5) then anything (uniform), or token 5
    # (p ~ 0.4) then END (p ~ 1): the best sequence is [5, END].
    tables = np.full((1, 3, 6, 6), -20.0, "float32")
    tables[0, 0, START, 4] = np.log(0.5)
    tables[0, 0, START, 5] = np.log(0.4)
    tables[0, 1, 4, :] = 0.0
    tables[0, 1, 5, END] = 0.0
    tables[0, 2, :, :] = 0.0
    model = FakeModel(tables)
    greedy = to_numpy(
        greedy_search(model.step_fn(), model.initial_state(), START, END, 3)
    )
    beam = run_beam(model, 2, 0.0)
    assert greedy["tokens"][0, 0] == 4
    np.testing.assert_array_equal(beam["tokens"], [[5, END, PAD]])
    np.testing.assert_array_equal(beam["lengths"], [2])
    assert beam["scores"][0] > greedy["scores"][0]
    # log-softmax renormalizes 0.5 and 0.4 (the rest is ~e^-20).
    np.testing.assert_allclose(beam["scores"], [np.log(0.4 / 0.9)], atol=1e-4)


def test_end_handling():
    tables = decoding_reference.random_tables(2, 5, 6, seed=4, scale=1.0)
    tables[..., END] += 2.0
    out = run_beam(FakeModel(tables), 3, 0.6)
    tokens, lengths = out["beam_tokens"], out["beam_lengths"]
    assert (lengths < 5).any()
    for b in range(2):
        for k in range(3):
            length = lengths[b, k]
            assert (tokens[b, k, :length] != PAD).all()
            assert (tokens[b, k, length:] == PAD).all()
            assert (tokens[b, k, : length - 1] != END).all()
            if length < 5:
                assert tokens[b, k, length - 1] == END
    for b in range(2):
        assert (out["attention"][b, out["lengths"][b] :] == 0).all()
    assert np.isfinite(out["beam_scores"]).all()
    assert np.isfinite(out["beam_normalized_scores"]).all()


def test_examples_get_different_answers():
    tables = decoding_reference.random_tables(3, 4, 6, seed=5)
    out = run_beam(FakeModel(tables), 3, 0.6)
    assert len({tuple(row) for row in out["tokens"]}) > 1
    expected = decoding_reference.beam_search(tables, 3, 0.6)
    np.testing.assert_array_equal(
        out["tokens"], np.stack([beams[0][0] for beams in expected])
    )


def test_jit_equals_eager():
    tables = decoding_reference.random_tables(2, 4, 6, seed=6, scale=1.0)
    tables[..., END] += 1.0
    model = FakeModel(tables)
    eager = run_beam(model, 3, 0.6)
    compiled = run_beam(model, 3, 0.6, compiled=True)
    for key in eager:
        np.testing.assert_allclose(
            compiled[key], eager[key], atol=1e-6, err_msg=key
        )


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"beam_size": 0}, "beam_size"),
        ({"beam_size": 1.5}, "beam_size"),
        ({"max_length": 0}, "max_length"),
        ({"length_penalty": -1.0}, "length_penalty"),
        ({"coverage_penalty": -0.5}, "coverage_penalty"),
        ({"coverage_penalty": None}, "coverage_penalty"),
    ],
)
def test_invalid_arguments(kwargs, name):
    model = FakeModel(decoding_reference.random_tables(1, 2, 6))
    args = {"max_length": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        beam_search(model.step_fn(1), model.initial_state(), START, END, **args)


def _coverage_case(seed):
    """Tables and attention `(2, 5, 6, 4)` (last source position masked)
    where the coverage penalty changes the ranking."""
    tables = decoding_reference.random_tables(2, 5, 6, seed=seed, scale=1.0)
    tables[..., END] += 1.0  # beams finish at different steps
    return tables, decoding_reference.random_attention(2, 5, 6, 4, seed=seed)


def test_coverage_log_by_hand():
    coverage = np.array([[0.5, 2.0, 0.0], [1.0, 0.25, 0.0]], "float32")
    np.testing.assert_allclose(
        to_numpy(coverage_log(coverage)), [np.log(0.5), np.log(0.25)]
    )
    assert decoding_reference.coverage_log(coverage[0]) == pytest.approx(
        np.log(0.5)
    )


@pytest.mark.parametrize("beam_size", [2, 3])
@pytest.mark.parametrize("coverage_penalty", [0.4, 2.0])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_coverage_penalty_matches_numpy_beam_search(
    beam_size, coverage_penalty, compiled
):
    tables, attention = _coverage_case(seed=8)
    out = run_beam(
        FakeModel(tables, attention),
        beam_size,
        0.6,
        compiled=compiled,
        coverage_penalty=coverage_penalty,
    )
    expected = decoding_reference.beam_search(
        tables, beam_size, 0.6, coverage_penalty, attention
    )
    for b, beams in enumerate(expected):
        tokens, scores, lengths, weights = zip(*beams)
        np.testing.assert_array_equal(out["beam_tokens"][b], np.stack(tokens))
        np.testing.assert_array_equal(out["beam_lengths"][b], lengths)
        np.testing.assert_allclose(out["beam_scores"][b], scores, atol=1e-5)
        # Ranked by the normalized score plus the (finite: the masked
        # position is left out) coverage penalty of the whole hypothesis.
        ranked = [
            decoding_reference.normalize(score, length, 0.6)
            + coverage_penalty * decoding_reference.coverage_log(w.sum(0))
            for score, length, w in zip(scores, lengths, weights)
        ]
        np.testing.assert_allclose(
            out["beam_normalized_scores"][b], ranked, atol=1e-4
        )
        np.testing.assert_allclose(
            out["beam_attention"][b], np.stack(weights), atol=1e-6
        )
    assert np.isfinite(out["beam_normalized_scores"]).all()
    assert (out["beam_lengths"] < 5).any()  # finished beams were penalized


def test_zero_coverage_penalty_changes_nothing():
    tables, attention = _coverage_case(seed=8)
    model = FakeModel(tables, attention)
    default = run_beam(model, 3, 0.6)
    zero = run_beam(model, 3, 0.6, coverage_penalty=0.0)
    for key in default:
        np.testing.assert_array_equal(zero[key], default[key], err_msg=key)
    # The same as the search without the penalty's reference ...
    expected = decoding_reference.beam_search(tables, 3, 0.6)
    for b, beams in enumerate(expected):
        tokens = np.stack([beam[0] for beam in beams])
        np.testing.assert_array_equal(default["beam_tokens"][b], tokens)
    # ... while a penalty does change the ranking on this case.
    penalized = run_beam(model, 3, 0.6, coverage_penalty=2.0)
    assert not np.array_equal(penalized["beam_tokens"], default["beam_tokens"])


def test_tile_beams_invalid_beam_size():
    with pytest.raises(ValueError, match="beam_size"):
        tile_beams(np.zeros((2, 3)), 0)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="SavedModel op check needs the TensorFlow backend",
)
def test_saved_model_uses_only_core_tensorflow_ops(tmp_path):
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    tables = decoding_reference.random_tables(2, 4, 6, seed=7, scale=1.0)
    model = FakeModel(tables)
    module = tf.Module()
    module.tables = tf.constant(np.reshape(tables, (2, 24, 6)))

    @tf.function(
        jit_compile=True,
        input_signature=[tf.TensorSpec((None,), tf.int32)],
    )
    def decode(count):
        # Unknown batch size: the search must not need static shapes.
        state = {"count": count, "code": tf.zeros_like(count, tf.float32)}
        return beam_search(model.step_fn(3), state, START, END, 4, 3, 0.6)

    module.decode = decode
    path = str(tmp_path / "beam_search")
    tf.saved_model.save(module, path)

    graph_def = decode.get_concrete_function().graph.as_graph_def()
    op_types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        op_types |= {node.op for node in function.node_def}
    assert "While" in op_types or "StatelessWhile" in op_types
    assert "GatherTree" not in op_types
    for op_type in op_types:
        assert op_def_registry.get(op_type) is not None, op_type

    restored = tf.saved_model.load(path)
    state = model.initial_state()
    out = to_numpy(restored.decode(state["count"]))
    eager = run_beam(model, 3, 0.6)
    for key in eager:
        np.testing.assert_allclose(out[key], eager[key], atol=1e-6)
