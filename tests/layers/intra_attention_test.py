"""IntraAttention: NumPy reference with distance biases, masks, errors."""

import keras
import numpy as np
import pytest

from attention_zoo.layers import IntraAttention
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, T, D = 2, 7, 5


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def np_intra_attention(a, weights, bias, max_distance, mask):
    key = a
    for kernel, b in zip(weights[::2], weights[1::2]):
        key = np.maximum(key @ kernel + b, 0.0)
    f = np.einsum("bik,bjk->bij", key, key)
    length = a.shape[1]
    for i in range(length):
        for j in range(length):
            f[:, i, j] += bias[
                max_distance + max(-max_distance, min(i - j, max_distance))
            ]
    weights = np_softmax(np.where(mask[:, None, :], f, -1e9), axis=-1)
    weights = weights * mask[:, None, :] * mask[:, :, None]
    return np.einsum("bij,bjd->bid", weights, a), weights


def test_standard_checks():
    run_layer_test(
        IntraAttention,
        {"max_distance": 3, "key_units": (4, 4), "dropout": 0.1, "seed": 1},
        random(B, T, D),
        expected_output_shape=(B, T, D),
        expected_num_trainable_weights=5,
    )
    _, weights = run_layer_test(
        IntraAttention,
        {},
        random(B, T, D),
        expected_output_shape=(B, T, D),
        expected_num_trainable_weights=1,
        call_kwargs={"return_attention_scores": True},
        run_training=False,
    )
    assert tuple(weights.shape) == (B, T, T)


@pytest.mark.parametrize("key_units", [None, (6, 3)])
def test_matches_numpy_reference(key_units):
    max_distance = 2
    layer = IntraAttention(max_distance=max_distance, key_units=key_units)
    a = random(B, T, D)
    layer(a)
    values = [random(*w.shape) for w in layer.get_weights()]
    layer.set_weights(values)
    paths = [w.path for w in layer.weights]
    bias = values[paths.index(layer.distance_bias.path)]
    network = [v for v, p in zip(values, paths) if "key_dense" in p]
    mask = np.array([[1] * 5 + [0] * 2, [1] * 7], bool)
    outputs, weights = layer(a, mask=mask, return_attention_scores=True)
    expected, expected_weights = np_intra_attention(
        a, network, bias, max_distance, mask
    )
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-5)
    np.testing.assert_allclose(to_numpy(outputs), expected, atol=1e-5)


def test_distance_bias_alone_sets_the_weights():
    # Zero inputs for the scores: only d(i - j) remains, so every row is
    # softmax over the biases of its distances.
    layer = IntraAttention(max_distance=1)
    a = np.zeros((1, 4, 2), "float32")
    layer(a)
    layer.set_weights([np.array([0.0, np.log(2.0), np.log(3.0)], "float32")])
    # distance i - j: -1 -> bias 0, 0 -> ln 2, +1 and beyond -> ln 3.
    _, weights = layer(a, return_attention_scores=True)
    first = np.array([2.0, 1.0, 1.0, 1.0]) / 5.0  # i=0: j=0 d0, j>0 d<=-1
    last = np.array([3.0, 3.0, 3.0, 2.0]) / 11.0  # i=3: j<3 d>=+1, j=3 d0
    np.testing.assert_allclose(to_numpy(weights)[0, 0], first, atol=1e-6)
    np.testing.assert_allclose(to_numpy(weights)[0, 3], last, atol=1e-6)


def test_padding_does_not_change_real_positions_and_mask_flows(tmp_path):
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(30, D, mask_zero=True)(tokens)
    phrase = IntraAttention(max_distance=2, key_units=(4,))(x)
    assert phrase._keras_mask is not None
    model = keras.Model(tokens, phrase)
    short = np.array([[5, 6, 7]], "int32")
    long = np.array([[5, 6, 7, 0, 0, 0]], "int32")
    np.testing.assert_allclose(
        to_numpy(model(long))[:, :3], to_numpy(model(short)), atol=1e-6
    )
    assert np.all(to_numpy(model(long))[:, 3:] == 0)
    assert_model_round_trip(model, long, tmp_path)


def test_fully_masked_sentence_gives_zeros():
    out = IntraAttention()(random(1, 3, D), mask=np.zeros((1, 3), bool))
    assert np.all(to_numpy(out) == 0)


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="max_distance"):
        IntraAttention(max_distance=0)
    with pytest.raises(ValueError, match="key_units"):
        IntraAttention(key_units=(-1,))
    with pytest.raises(ValueError, match=r"\(B, T, d\)"):
        IntraAttention()(random(3, 4))
