"""BilinearAttention: NumPy references of the four scores, errors."""

import numpy as np
import pytest

from attention_zoo.layers import BilinearAttention
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, TQ, TV, D, DV, R = 2, 3, 5, 4, 6, 3


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def np_scores(score, query, key, weights):
    """Luong scores `(B, Tq, Tv)` written out per formula."""
    if score == "dot":
        return np.einsum("bqd,btd->bqt", query, key)
    if score == "scaled_dot":
        return np.einsum("bqd,btd->bqt", query, key) / np.sqrt(D)
    if score == "general":
        (w,) = weights
        return np.einsum("bqi,ij,btj->bqt", query, w, key)
    u, v, p = weights
    # p^T (U q * V k), with the (Tq, Tv, R) product made explicitly.
    product = (query @ u)[:, :, None, :] * (key @ v)[:, None, :, :]
    return product @ p


@pytest.mark.parametrize(
    "score, rank",
    [("dot", None), ("scaled_dot", None), ("general", None), ("low_rank", R)],
)
def test_matches_numpy_reference(score, rank):
    layer = BilinearAttention(score=score, rank=rank)
    query, key, value = random(B, TQ, D), random(B, TV, D), random(B, TV, DV)
    mask = np.array([[1, 1, 1, 1, 0], [1, 0, 1, 1, 1]], bool)
    layer(query, value, key=key)
    weights = [random(*w.shape) for w in layer.get_weights()]
    layer.set_weights(weights)
    output, attention = layer(
        query, value, key=key, value_mask=mask, return_attention_scores=True
    )
    scores = np.where(
        mask[:, None], np_scores(score, query, key, weights), -1e9
    )
    expected_attention = np_softmax(scores)
    np.testing.assert_allclose(
        to_numpy(attention), expected_attention, atol=1e-5
    )
    np.testing.assert_allclose(
        to_numpy(output), expected_attention @ value, atol=1e-5
    )


def test_small_case_by_hand():
    # q = (1, 0); keys (ln 3, 0) and (0, 5): dot scores ln 3 and 0, so the
    # weights are 3/4 and 1/4.
    query = np.array([[[1.0, 0.0]]], "float32")
    key = np.array([[[np.log(3.0), 0.0], [0.0, 5.0]]], "float32")
    value = np.array([[[4.0], [8.0]]], "float32")
    output, weights = BilinearAttention(score="dot")(
        query, value, key=key, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(weights), [[[0.75, 0.25]]], atol=1e-6)
    np.testing.assert_allclose(to_numpy(output), [[[5.0]]], atol=1e-5)


@pytest.mark.parametrize(
    "score, rank, num_weights",
    [("dot", None, 0), ("general", None, 1), ("low_rank", 2, 3)],
)
def test_standard_checks_other_scores(score, rank, num_weights):
    run_layer_test(
        BilinearAttention,
        {"score": score, "rank": rank},
        {"query": random(B, TQ, D), "value": random(B, TV, D)},
        expected_output_shape=(B, TQ, D),
        expected_num_trainable_weights=num_weights,
        run_training=num_weights > 0,
    )


def test_general_allows_different_widths():
    layer = BilinearAttention(score="general")
    output = layer(random(B, TQ, 3), random(B, TV, DV), key=random(B, TV, 5))
    assert tuple(output.shape) == (B, TQ, DV)
    assert tuple(layer.kernel.shape) == (3, 5)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"score": "concat"}, "score"),
        ({"score": "low_rank"}, "rank"),
        ({"score": "low_rank", "rank": 0}, "rank"),
        ({"score": "low_rank", "rank": 1.5}, "rank"),
        ({"score": "dot", "rank": 4}, "rank"),
        ({"score": "general", "rank": 4}, "rank"),
    ],
)
def test_invalid_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        BilinearAttention(**kwargs)


@pytest.mark.parametrize("score", ["dot", "scaled_dot"])
def test_dot_scores_need_equal_widths(score):
    with pytest.raises(ValueError, match="key_shape"):
        BilinearAttention(score=score)(random(B, TQ, 3), random(B, TV, 5))
