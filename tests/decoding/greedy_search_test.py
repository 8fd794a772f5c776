import numpy as np
import pytest
from keras import ops

from attention_zoo.decoding import greedy_search
from tests.support import decoding_reference
from tests.support.decoding_reference import END
from tests.support.decoding_reference import PAD
from tests.support.decoding_reference import START
from tests.support.decoding_reference import FakeModel
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy


def run_greedy(model, compiled=False):
    def decode(state):
        return greedy_search(
            model.step_fn(), state, START, END, model.max_length
        )

    if compiled:
        decode = jit(decode)
    return to_numpy(decode(model.initial_state()))


def assert_matches(out, expected):
    tokens, scores, lengths, attention = zip(*expected)
    np.testing.assert_array_equal(out["tokens"], np.stack(tokens))
    np.testing.assert_array_equal(out["lengths"], np.array(lengths))
    np.testing.assert_allclose(out["scores"], np.array(scores), atol=1e-5)
    np.testing.assert_allclose(out["attention"], np.stack(attention))


def test_hand_example():
    # From START (2) the likeliest token is 4, from 4 it is END (3):
    # p = 1.1 / 1.5 each time.
    table = np.log(np.full((5, 5), 0.1) + np.eye(5)[[1, 3, 4, 4, 3]])

    def step_fn(token_ids, state, index):
        logits = ops.take(ops.convert_to_tensor(table, "float32"), token_ids, 0)
        return logits, state + 1, ops.one_hot(token_ids, 5)

    out = to_numpy(greedy_search(step_fn, np.zeros((2,), "int32"), 2, 3, 4))
    np.testing.assert_array_equal(out["tokens"], [[4, 3, 0, 0]] * 2)
    np.testing.assert_array_equal(out["lengths"], [2, 2])
    np.testing.assert_allclose(out["scores"], [2 * np.log(1.1 / 1.5)] * 2)
    attention = np.zeros((4, 5), "float32")
    attention[0, START] = attention[1, 4] = 1.0
    np.testing.assert_array_equal(out["attention"], [attention] * 2)
    assert out["tokens"].dtype == np.int32
    assert out["lengths"].dtype == np.int32
    assert out["scores"].dtype == np.float32
    assert out["attention"].dtype == np.float32


@pytest.mark.parametrize("max_length", [1, 4])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_matches_numpy_reference(max_length, compiled):
    tables = decoding_reference.random_tables(3, max_length, 6, seed=1)
    out = run_greedy(FakeModel(tables), compiled=compiled)
    assert_matches(out, decoding_reference.greedy(tables))


def test_examples_get_different_answers():
    tables = decoding_reference.random_tables(3, 4, 6, seed=2)
    out = run_greedy(FakeModel(tables))
    assert len({tuple(row) for row in out["tokens"]}) > 1
    assert_matches(out, decoding_reference.greedy(tables))


def test_end_handling():
    # Example 0 ends at step 1, example 1 at step 3, example 2 never.
    tables = decoding_reference.random_tables(3, 5, 6, seed=3, scale=0.5)
    tables[..., END] = -10.0
    tables[0, 1, :, END] = 10.0
    tables[1, 3, :, END] = 10.0
    out = run_greedy(FakeModel(tables))
    np.testing.assert_array_equal(out["lengths"], [2, 4, 5])
    assert out["tokens"][0, 1] == END and out["tokens"][1, 3] == END
    assert (out["tokens"][0, 2:] == PAD).all()
    assert (out["tokens"][1, 4:] == PAD).all()
    assert (out["tokens"][2] != END).all()
    assert (out["attention"][0, 2:] == 0).all()
    assert (out["attention"][1, 4:] == 0).all()
    assert (out["attention"][:, :2].sum(-1) > 0).all()
    # Scores stop at END: the sum over the kept tokens only.
    assert_matches(out, decoding_reference.greedy(tables))


def test_state_is_carried():
    tables = decoding_reference.random_tables(2, 4, 6, seed=4)
    out = run_greedy(FakeModel(tables))
    # Last column: `count - index`, zero when the counter is carried.
    np.testing.assert_array_equal(out["attention"][..., -1], 0.0)
    # Second to last: a code of the path, which the reference recomputes.
    expected = np.stack([r[3] for r in decoding_reference.greedy(tables)])
    np.testing.assert_array_equal(out["attention"][..., -2], expected[..., -2])


def test_low_precision_logits_give_float32_scores():
    tables = decoding_reference.random_tables(2, 3, 6, seed=5) * 1e3
    model = FakeModel(tables)
    step_fn = model.step_fn()

    def bf16_step_fn(token_ids, state, index):
        logits, state, attention = step_fn(token_ids, state, index)
        return ops.cast(logits, "bfloat16"), state, attention

    out = to_numpy(
        greedy_search(bf16_step_fn, model.initial_state(), START, END, 3)
    )
    assert out["scores"].dtype == np.float32
    assert np.isfinite(out["scores"]).all()


@pytest.mark.parametrize("max_length", [0, -1, 2.5, None])
def test_invalid_max_length(max_length):
    model = FakeModel(decoding_reference.random_tables(1, 2, 6))
    with pytest.raises(ValueError, match="max_length"):
        greedy_search(
            model.step_fn(), model.initial_state(), START, END, max_length
        )


def test_empty_state_raises():
    model = FakeModel(decoding_reference.random_tables(1, 2, 6))
    with pytest.raises(ValueError, match="initial_state"):
        greedy_search(model.step_fn(), {}, START, END, 2)
