"""AttentionLSTMDecoder: the penalty, shapes, masks, teacher forcing equal
to step-by-step decoding, XLA, serialization."""

import keras
import numpy as np
import pytest

from applications.captioning.decoder import AttentionLSTMDecoder
from applications.captioning.decoder import attention_penalty
from tests.test_case import jit
from tests.test_case import to_numpy

B, L, D, V = 2, 6, 12, 30
TOKENS = np.array([[2, 5, 6, 7, 0], [2, 8, 9, 0, 0]], "int32")


def features():
    return np.random.default_rng(0).normal(size=(B, L, D)).astype("float32")


def test_penalty_matches_numpy():
    rng = np.random.default_rng(1)
    weights = rng.dirichlet(np.ones(L), size=(B, 5)).astype("float32")
    mask = TOKENS != 0
    expected = [
        sum(
            (1.0 - sum(weights[b, t, i] for t in range(5) if mask[b, t])) ** 2
            for i in range(L)
        )
        for b in range(B)
    ]
    np.testing.assert_allclose(
        to_numpy(attention_penalty(weights, mask)), expected, rtol=1e-5
    )
    # Attention that covers every position exactly once costs nothing.
    once = np.eye(L, dtype="float32")[None]
    assert float(to_numpy(attention_penalty(once))[0]) == pytest.approx(0.0)


@pytest.mark.parametrize(
    "attention, prediction",
    [
        ("additive", "deep"),
        ("general", "deep"),
        ("dot", "deep"),
        (None, "deep"),
        ("additive", "latent"),
        ("dot", "latent"),
    ],
)
def test_teacher_forcing_equals_step_by_step_decoding(attention, prediction):
    decoder = AttentionLSTMDecoder(
        V, 8, D, attention=attention, dropout=0.3, prediction=prediction
    )
    logits, weights = decoder(features(), TOKENS)
    assert tuple(logits.shape) == (B, 5, V) and logits.dtype == "float32"
    assert tuple(weights.shape) == (B, 5, L)
    memory = decoder.prepare(features())
    state = decoder.initial_state(memory)
    for t in range(5):
        step_logits, state, step_weights = decoder.step(
            TOKENS[:, t], state, memory
        )
        np.testing.assert_allclose(
            to_numpy(step_logits), to_numpy(logits)[:, t], atol=1e-5
        )
        np.testing.assert_allclose(
            to_numpy(step_weights), to_numpy(weights)[:, t], atol=1e-6
        )
    if attention is None:
        assert np.all(to_numpy(weights) == 0)
    else:
        np.testing.assert_allclose(to_numpy(weights).sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("attention", ["additive", "general"])
def test_word_query_looks_with_the_previous_word(attention):
    """Step t's input is word t-1. With the paper's query the step looks
    before reading it (its weights ignore that word); with
    `query="state_and_word"` they depend on it; decoding step by step still
    equals teacher forcing."""
    changed = TOKENS.copy()
    changed[:, 2] = [11, 12]
    for query in ("state", "state_and_word"):
        decoder = AttentionLSTMDecoder(
            V, 8, D, attention=attention, query=query
        )
        logits, weights = (to_numpy(x) for x in decoder(features(), TOKENS))
        _, other = (to_numpy(x) for x in decoder(features(), changed))
        np.testing.assert_allclose(other[:, :2], weights[:, :2], atol=1e-6)
        step_changed = np.abs(other[:, 2] - weights[:, 2]).max() > 1e-4
        assert step_changed == (query == "state_and_word")
        memory = decoder.prepare(features())
        state = decoder.initial_state(memory)
        for t in range(5):
            step_logits, state, step_weights = decoder.step(
                TOKENS[:, t], state, memory
            )
            np.testing.assert_allclose(
                to_numpy(step_logits), logits[:, t], atol=1e-5
            )
            np.testing.assert_allclose(
                to_numpy(step_weights), weights[:, t], atol=1e-6
            )


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("query", ["state", "state_and_word"])
def test_latent_prediction_is_a_mixture_over_positions(query):
    """`prediction="latent"`: `p(y_t) = sum_i alpha_ti softmax(L_o(deep_t +
    L_a a_i))`, checked against NumPy from the layer's weights; the step
    reads word t-1 before it looks (its weights depend on that word)."""
    decoder = AttentionLSTMDecoder(V, 8, D, prediction="latent", query=query)
    logits, weights = (to_numpy(x) for x in decoder(features(), TOKENS))
    np.testing.assert_allclose(np.exp(logits).sum(-1), 1.0, atol=1e-5)
    position_kernel = to_numpy(decoder.position_output.kernel)  # (D, e)
    out_kernel = to_numpy(decoder.logits.kernel)  # (e, V)
    out_bias = to_numpy(decoder.logits.bias)
    memory = decoder.prepare(features())
    state = decoder.initial_state(memory)
    assert len(state) == 3 and np.all(to_numpy(state[2]) == 0)
    per_position = features() @ position_kernel  # (B, L, e)
    for t in range(TOKENS.shape[1]):
        deep, state, step_weights = decoder.recur(
            decoder.embed(TOKENS[:, t]), state, memory
        )
        deep = to_numpy(deep)
        # (B, L, V): the word's distribution if the decoder looked at i.
        given = softmax((deep[:, None] + per_position) @ out_kernel + out_bias)
        expected = np.einsum("bl,blv->bv", to_numpy(step_weights), given)
        np.testing.assert_allclose(np.exp(logits[:, t]), expected, atol=1e-5)
    changed = TOKENS.copy()
    changed[:, 2] = [11, 12]
    _, other = (to_numpy(x) for x in decoder(features(), changed))
    np.testing.assert_allclose(other[:, :2], weights[:, :2], atol=1e-6)
    assert np.abs(other[:, 2] - weights[:, 2]).max() > 1e-4


def test_latent_prediction_under_mixed_bfloat16():
    """The mixture is taken in float32: probabilities that sum to 1 and
    stay close to the float32 decoder with the same weights."""
    exact = AttentionLSTMDecoder(V, 8, D, prediction="latent")
    expected = to_numpy(exact(features(), TOKENS)[0])
    mixed = AttentionLSTMDecoder(
        V, 8, D, prediction="latent", dtype="mixed_bfloat16"
    )
    mixed(features(), TOKENS)
    mixed.set_weights(exact.get_weights())
    logits, weights = mixed(features(), TOKENS)
    assert logits.dtype == "float32" and weights.dtype == "float32"
    probabilities = np.exp(to_numpy(logits))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(probabilities, np.exp(expected), atol=2e-3)


def test_later_padding_does_not_change_earlier_steps():
    decoder = AttentionLSTMDecoder(V, 8, D)
    short = to_numpy(decoder(features(), TOKENS[:, :3])[0])
    long = to_numpy(decoder(features(), TOKENS)[0])
    np.testing.assert_allclose(long[:, :3], short, atol=1e-6)


def test_penalty_is_added_in_training_only():
    decoder = AttentionLSTMDecoder(V, 8, D, attention_regularization=2.0)
    decoder(features(), TOKENS)
    assert not decoder.losses
    _, weights = decoder(features(), TOKENS, training=True)
    (loss,) = decoder.losses
    lengths = (TOKENS != 0).sum(1)
    expected = 2.0 * np.mean(
        to_numpy(attention_penalty(weights, TOKENS != 0)) / lengths
    )
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    baseline = AttentionLSTMDecoder(V, 8, D, attention=None)
    baseline(features(), TOKENS, training=True)
    assert not baseline.losses


@pytest.mark.parametrize("prediction", ["deep", "latent"])
def test_xla_scan_and_unrolled_paths_agree(prediction):
    decoder = AttentionLSTMDecoder(V, 8, D, prediction=prediction)
    eager = to_numpy(decoder(features(), TOKENS)[0])
    compiled = to_numpy(jit(lambda f, t: decoder(f, t)[0])(features(), TOKENS))
    np.testing.assert_allclose(compiled, eager, atol=1e-5)
    if keras.backend.backend() == "tensorflow":
        # An unknown caption length takes the keras.ops.scan path.
        import tensorflow as tf

        dynamic = tf.function(
            lambda f, t: decoder(f, t)[0],
            input_signature=[
                tf.TensorSpec([None, L, D]),
                tf.TensorSpec([None, None], tf.int32),
            ],
        )
        np.testing.assert_allclose(
            to_numpy(dynamic(features(), TOKENS)), eager, atol=1e-5
        )


def test_config_round_trip_and_errors():
    decoder = AttentionLSTMDecoder(
        V,
        8,
        D,
        attention="general",
        dropout=0.1,
        query="state_and_word",
        prediction="latent",
    )
    config = decoder.get_config()
    assert config["query"] == "state_and_word"
    assert config["prediction"] == "latent"
    assert AttentionLSTMDecoder.from_config(config).get_config() == config
    assert config["vocabulary_size"] == V
    # Configs saved before the rename (`vocab_size`) still load.
    old = {**config, "vocab_size": config.pop("vocabulary_size")}
    assert AttentionLSTMDecoder.from_config(old).vocabulary_size == V
    with pytest.raises(ValueError, match="query"):
        AttentionLSTMDecoder(V, query="word")
    with pytest.raises(ValueError, match="prediction"):
        AttentionLSTMDecoder(V, prediction="soft")
    with pytest.raises(ValueError, match="attention=None"):
        AttentionLSTMDecoder(V, attention=None, prediction="latent")
    with pytest.raises(ValueError, match="attention"):
        AttentionLSTMDecoder(V, attention="cosine")
    with pytest.raises(ValueError, match="attention_regularization"):
        AttentionLSTMDecoder(V, attention_regularization=-1.0)
    with pytest.raises(ValueError, match="units"):
        AttentionLSTMDecoder(V, 8, D + 1, attention="dot")(features(), TOKENS)
