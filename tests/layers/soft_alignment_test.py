"""SoftAlignment: NumPy reference, both normalisations, masks, precision."""

import keras
import numpy as np
import pytest

from attention_zoo.layers import SoftAlignment
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, M, N, D = 2, 5, 4, 6


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def np_mlp(x, weights):
    for kernel, bias in zip(weights[::2], weights[1::2]):
        x = np.maximum(x @ kernel + bias, 0.0)
    return x


def np_soft_alignment(a, b, weights, a_mask, b_mask):
    """Textbook eqs. 15.46, 15.47 and 15.50, with masks."""
    e = np.einsum("bik,bjk->bij", np_mlp(a, weights), np_mlp(b, weights))
    a_to_b = np_softmax(np.where(b_mask[:, None, :], e, -1e9), axis=2)
    b_to_a = np_softmax(np.where(a_mask[:, :, None], e, -1e9), axis=1)
    a_to_b = a_to_b * b_mask[:, None, :] * a_mask[:, :, None]
    b_to_a = b_to_a * b_mask[:, None, :] * a_mask[:, :, None]
    beta = np.einsum("bij,bjd->bid", a_to_b, b)
    alpha = np.einsum("bij,bid->bjd", b_to_a, a)
    return beta, alpha, a_to_b, np.swapaxes(b_to_a, 1, 2)


MASK_A = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
MASK_B = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)


def test_standard_checks():
    inputs = [random(B, M, D), random(B, N, D)]
    run_layer_test(
        SoftAlignment,
        {"key_units": (8, 8), "dropout": 0.1, "seed": 3},
        inputs,
        expected_output_shape=(B, M, D),
        expected_num_trainable_weights=4,
    )
    beta, alpha, a_to_b, b_to_a = run_layer_test(
        SoftAlignment,
        {},
        inputs,
        expected_output_shape=(B, M, D),
        expected_num_trainable_weights=0,
        call_kwargs={"return_attention_scores": True},
        run_training=False,
    )
    assert tuple(alpha.shape) == (B, N, D)
    assert tuple(a_to_b.shape) == (B, M, N) and tuple(b_to_a.shape) == (B, N, M)


@pytest.mark.parametrize("key_units", [None, (7,), (8, 3)])
def test_matches_numpy_reference(key_units):
    layer = SoftAlignment(key_units=key_units)
    a, b = random(B, M, D), random(B, N, D)
    layer([a, b])
    weights = [random(*w.shape) for w in layer.get_weights()]
    layer.set_weights(weights)
    outputs = layer([a, b], mask=[MASK_A, MASK_B], return_attention_scores=True)
    expected = np_soft_alignment(a, b, weights, MASK_A, MASK_B)
    for actual, reference in zip(to_numpy(outputs), expected):
        np.testing.assert_allclose(actual, reference, atol=1e-5, rtol=1e-5)


def test_normalisations_are_symmetric():
    layer = SoftAlignment(key_units=(8,))
    a, b = random(B, M, D), random(B, N, D)
    beta, alpha, a_to_b, b_to_a = to_numpy(
        layer([a, b], mask=[MASK_A, MASK_B], return_attention_scores=True)
    )
    # Swapping the sentences swaps the roles exactly.
    beta2, alpha2, b_to_a2, a_to_b2 = to_numpy(
        layer([b, a], mask=[MASK_B, MASK_A], return_attention_scores=True)
    )
    np.testing.assert_allclose(beta2, alpha, atol=1e-6)
    np.testing.assert_allclose(alpha2, beta, atol=1e-6)
    np.testing.assert_allclose(a_to_b2, a_to_b, atol=1e-6)
    np.testing.assert_allclose(b_to_a2, b_to_a, atol=1e-6)
    # beta's weights sum to 1 over b for real words of a, alpha's over a.
    np.testing.assert_allclose(a_to_b.sum(-1), MASK_A * 1.0, atol=1e-5)
    np.testing.assert_allclose(b_to_a.sum(-1), MASK_B * 1.0, atol=1e-5)
    # Both come from one score matrix: the double difference
    # e_ij - e_ik - e_hj + e_hk reads the same from either normalisation.
    log_ab, log_ba = np.log(a_to_b[1]), np.log(b_to_a[1])
    for i, h, j, k in [(0, 1, 0, 1), (2, 4, 3, 1), (1, 3, 2, 0)]:
        from_rows = log_ab[i, j] - log_ab[i, k] - log_ab[h, j] + log_ab[h, k]
        from_cols = log_ba[j, i] - log_ba[j, h] - log_ba[k, i] + log_ba[k, h]
        np.testing.assert_allclose(from_rows, from_cols, atol=1e-4)


def test_padding_does_not_change_real_positions():
    layer = SoftAlignment(key_units=(8,))
    a, b = random(1, 3, D), random(1, 2, D)
    short = to_numpy(layer([a, b], return_attention_scores=True))
    a_pad = np.concatenate([a, random(1, 4, D)], axis=1)
    b_pad = np.concatenate([b, random(1, 5, D)], axis=1)
    a_mask = np.array([[1, 1, 1, 0, 0, 0, 0]], bool)
    b_mask = np.array([[1, 1, 0, 0, 0, 0, 0]], bool)
    long = to_numpy(
        layer(
            [a_pad, b_pad],
            mask=[a_mask, b_mask],
            return_attention_scores=True,
        )
    )
    np.testing.assert_allclose(long[0][:, :3], short[0], atol=1e-6)
    np.testing.assert_allclose(long[1][:, :2], short[1], atol=1e-6)
    np.testing.assert_allclose(long[2][:, :3, :2], short[2], atol=1e-6)
    np.testing.assert_allclose(long[3][:, :2, :3], short[3], atol=1e-6)
    assert np.all(long[0][:, 3:] == 0) and np.all(long[1][:, 2:] == 0)
    assert np.all(long[2][:, :, 2:] == 0) and np.all(long[3][:, :, 3:] == 0)


def test_fully_masked_sentence_gives_zeros_not_nan():
    layer = SoftAlignment()
    a, b = random(1, 3, D), random(1, 2, D)
    beta, alpha = to_numpy(layer([a, b], mask=[None, np.zeros((1, 2), bool)]))
    assert np.all(beta == 0) and np.all(np.isfinite(alpha))


def test_keras_masks_flow_in_and_out(tmp_path):
    tokens_a = keras.Input((None,), dtype="int32")
    tokens_b = keras.Input((None,), dtype="int32")
    embed = keras.layers.Embedding(20, D, mask_zero=True)
    beta, alpha, a_to_b, _ = SoftAlignment(key_units=(4,))(
        [embed(tokens_a), embed(tokens_b)], return_attention_scores=True
    )
    model = keras.Model([tokens_a, tokens_b], [beta, alpha, a_to_b])
    ids_a = np.array([[3, 4, 5, 0, 0]], "int32")
    ids_b = np.array([[6, 7, 0]], "int32")
    beta, alpha, a_to_b = to_numpy(model([ids_a, ids_b]))
    assert np.all(a_to_b[0, :, 2] == 0) and np.all(a_to_b[0, 3:] == 0)
    assert np.all(beta[0, 3:] == 0) and np.all(alpha[0, 2:] == 0)
    # The outputs carry the masks of their rows: a masked average after
    # `beta` (and `alpha`) counts only the real words.
    pooled = [
        keras.layers.GlobalAveragePooling1D()(x)
        for x in SoftAlignment()([embed(tokens_a), embed(tokens_b)])
    ]
    averages = keras.Model([tokens_a, tokens_b], pooled)
    beta_plain, alpha_plain = SoftAlignment()(
        [embed(ids_a[:, :3]), embed(ids_b[:, :2])]
    )
    mean_beta, mean_alpha = to_numpy(averages([ids_a, ids_b]))
    np.testing.assert_allclose(
        mean_beta, to_numpy(beta_plain).mean(1), atol=1e-6
    )
    np.testing.assert_allclose(
        mean_alpha, to_numpy(alpha_plain).mean(1), atol=1e-6
    )
    assert_model_round_trip(model, [ids_a, ids_b], tmp_path)


def test_mixed_precision_with_large_scores():
    layer = SoftAlignment(dtype="mixed_bfloat16")
    a = random(B, M, D) * 60.0
    beta, alpha = layer([a, a[:, :N]])
    for value in (beta, alpha):
        assert np.all(np.isfinite(to_numpy(keras.ops.cast(value, "float32"))))


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="key_units"):
        SoftAlignment(key_units=(8, 0))
    with pytest.raises(ValueError, match="key_units"):
        SoftAlignment(key_units=())
    with pytest.raises(ValueError, match="dropout"):
        SoftAlignment(dropout=1.0)
    with pytest.raises(ValueError, match="same width"):
        SoftAlignment()([random(1, 3, 4), random(1, 3, 5)])
    with pytest.raises(ValueError, match=r"\(B, T, d\)"):
        SoftAlignment()([random(3, 4), random(3, 4)])
    with pytest.raises(ValueError, match=r"list \[a, b\]"):
        SoftAlignment()(random(1, 3, 4))
