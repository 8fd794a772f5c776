import math

import keras
import numpy as np
import pytest

from attention_zoo.blocks import PositionalEmbedding
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

IDS = np.array([[3, 1, 4, 0, 0], [5, 9, 2, 6, 0]], "int32")


def np_sinusoids(positions, dim):
    """Vaswani et al.: sin on the first half of channels, cos on the rest."""
    i = np.arange(dim // 2)
    angles = positions[:, None] / 10000.0 ** (2 * i / dim)[None]
    return np.concatenate([np.sin(angles), np.cos(angles)], -1)


def np_positional_embedding(layer, ids, start=0):
    x = to_numpy(layer.token_embeddings)[ids]
    if layer.scale_embeddings:
        x = x * math.sqrt(layer.output_dim)
    steps = np.arange(ids.shape[1]) + start
    if layer.positions == "learned":
        return x + to_numpy(layer.position_embeddings)[steps]
    return x + np_sinusoids(steps, layer.output_dim)


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_layer_harness(positions):
    run_layer_test(
        PositionalEmbedding,
        dict(
            vocabulary_size=10,
            output_dim=8,
            max_length=16,
            positions=positions,
        ),
        IDS,
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=1 + (positions == "learned"),
    )


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
@pytest.mark.parametrize("scale_embeddings", [True, False])
def test_matches_numpy_reference(positions, scale_embeddings):
    layer = PositionalEmbedding(
        10,
        8,
        max_length=16,
        positions=positions,
        scale_embeddings=scale_embeddings,
    )
    output = to_numpy(layer(IDS))
    np.testing.assert_allclose(
        output, np_positional_embedding(layer, IDS), atol=1e-5
    )


def test_sinusoids_by_hand():
    # D = 2: P[p] = (sin p, cos p); zero token embeddings, no scale.
    layer = PositionalEmbedding(3, 2, max_length=4, scale_embeddings=False)
    layer.build((1, 3))
    layer.token_embeddings.assign(np.zeros((3, 2), "float32"))
    output = to_numpy(layer(np.array([[1, 2, 1]])))[0]
    expected = [[0.0, 1.0], [math.sin(1), math.cos(1)], [math.sin(2), -0.4161]]
    np.testing.assert_allclose(output, expected, atol=1e-4)


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_start_index_embeds_one_step_at_its_position(positions):
    layer = PositionalEmbedding(10, 8, max_length=16, positions=positions)
    full = to_numpy(layer(IDS))
    for t in range(IDS.shape[1]):
        step = layer(IDS[:, t : t + 1], start_index=t)
        np.testing.assert_allclose(to_numpy(step), full[:, t : t + 1], 1e-6)
    compiled = jit(lambda ids, t: layer(ids, start_index=t))
    step = compiled(IDS[:, 3:4], np.int32(3))
    np.testing.assert_allclose(to_numpy(step), full[:, 3:4], atol=1e-6)


def test_mask_propagates():
    layer = PositionalEmbedding(10, 8, max_length=16)
    np.testing.assert_array_equal(to_numpy(layer.compute_mask(IDS)), IDS != 0)
    no_mask = PositionalEmbedding(10, 8, max_length=16, mask_zero=False)
    assert no_mask.compute_mask(IDS) is None
    ids = keras.Input((None,), dtype="int32")
    assert layer(ids)._keras_mask is not None


def test_reverse_uses_transposed_token_matrix():
    layer = PositionalEmbedding(10, 8, max_length=16)
    hidden = np.random.randn(2, 3, 8).astype("float32")
    layer.build((2, 3))
    scores = to_numpy(layer(hidden, reverse=True))
    expected = hidden @ to_numpy(layer.token_embeddings).T
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    assert layer.compute_output_shape((2, 3, 8)) == (2, 3, 10)


def test_mixed_precision_close_to_float32():
    layer = PositionalEmbedding(10, 8, max_length=16)
    reference = to_numpy(layer(IDS))
    mixed = PositionalEmbedding(10, 8, max_length=16, dtype="mixed_bfloat16")
    mixed.build(IDS.shape)
    mixed.set_weights(layer.get_weights())
    output = mixed(IDS)
    assert keras.backend.standardize_dtype(output.dtype) == "bfloat16"
    np.testing.assert_allclose(
        to_numpy(keras.ops.cast(output, "float32")), reference, atol=0.05
    )


def test_model_round_trip(tmp_path):
    ids = keras.Input((None,), dtype="int32")
    outputs = PositionalEmbedding(10, 8, max_length=16, positions="learned")(
        ids
    )
    assert_model_round_trip(keras.Model(ids, outputs), IDS, tmp_path)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(vocabulary_size=0), "vocabulary_size"),
        (dict(output_dim=7), "output_dim"),
        (dict(output_dim=-2), "output_dim"),
        (dict(max_length=0), "max_length"),
        (dict(positions="rotary"), "positions"),
    ],
)
def test_invalid_arguments_raise(kwargs, argument):
    arguments = dict(vocabulary_size=10, output_dim=8, max_length=16)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=argument):
        PositionalEmbedding(**arguments)
