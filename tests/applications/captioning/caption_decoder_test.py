"""AttentionLSTMDecoder: the penalty, shapes, masks, teacher forcing equal
to step-by-step decoding, XLA, serialization."""

import keras
import numpy as np
import pytest

from attention_zoo_apps.captioning.attention_losses import attention_penalty
from attention_zoo_apps.captioning.attention_losses import (
    caption_log_likelihood,
)
from attention_zoo_apps.captioning.decoder import AttentionLSTMDecoder
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy

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
    "attention, prediction, mode",
    [
        ("additive", "deep", "soft"),
        ("general", "deep", "soft"),
        ("dot", "deep", "soft"),
        (None, "deep", "soft"),
        ("additive", "latent", "soft"),
        ("dot", "latent", "soft"),
        ("additive", "deep", "hard"),
        ("general", "latent", "hard"),
    ],
)
def test_teacher_forcing_equals_step_by_step_decoding(
    attention, prediction, mode
):
    decoder = AttentionLSTMDecoder(
        V,
        8,
        D,
        attention=attention,
        dropout=0.3,
        prediction=prediction,
        attention_mode=mode,
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
    if mode == "hard":  # one cell per word: the most likely
        assert set(np.unique(to_numpy(weights))) == {0.0, 1.0}


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
        deep, state, step_weights, _ = decoder.recur(
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
        attention_mode="hard",
        hard_inference="expectation",
        reinforce_weight=0.5,
        entropy_weight=0.01,
        semi_sampling=0.5,
    )
    config = decoder.get_config()
    assert config["semi_sampling"] == 0.5
    assert config["query"] == "state_and_word"
    assert config["attention_mode"] == "hard"
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
    for kwargs, argument in (
        ({"attention_mode": "sampled"}, "attention_mode"),
        ({"attention_mode": "hard", "attention": None}, "attention=None"),
        ({"hard_inference": "sample"}, "hard_inference"),
        ({"reinforce_weight": -1.0}, "reinforce_weight"),
        ({"entropy_weight": -0.1}, "entropy_weight"),
        ({"semi_sampling": 1.5}, "semi_sampling"),
    ):
        with pytest.raises(ValueError, match=argument):
            AttentionLSTMDecoder(V, **kwargs)


def hard_decoder(**kwargs):
    return AttentionLSTMDecoder(
        V, 8, D, attention_mode="hard", dropout=0.0, **kwargs
    )


def test_hard_attention_samples_in_training_and_reads_the_argmax_else():
    decoder = hard_decoder(hard_inference="expectation")
    _, alpha = (to_numpy(x) for x in decoder(features(), TOKENS))
    assert np.all((alpha > 0) & (alpha < 1))  # the distribution
    decoder.attention_layer.inference = "argmax"
    _, argmax = (to_numpy(x) for x in decoder(features(), TOKENS))
    # The first step's distributions are alike (later ones read other
    # contexts).
    np.testing.assert_array_equal(
        argmax[:, 0].argmax(-1), alpha[:, 0].argmax(-1)
    )
    draws = np.stack(
        [
            to_numpy(decoder(features(), TOKENS, training=True)[1]).argmax(-1)
            for _ in range(8)
        ]
    )
    np.testing.assert_array_equal(np.isin(draws, range(L)), True)
    assert len(np.unique(draws[:, 0, 0])) > 1  # not always the argmax


def test_semi_sampling_reads_the_expectation_for_the_images_it_draws():
    """semi_sampling=1: every image reads `alpha @ features` in training,
    as hard_inference="expectation" does at inference, with no REINFORCE
    log-probability; semi_sampling=0 keeps sampling."""
    always = hard_decoder(hard_inference="expectation", semi_sampling=1.0)
    expected, alpha = (to_numpy(x) for x in always(features(), TOKENS))
    for _ in range(2):
        logits, weights = always(features(), TOKENS, training=True)
        np.testing.assert_allclose(to_numpy(logits), expected, atol=1e-5)
        np.testing.assert_allclose(to_numpy(weights), alpha, atol=1e-6)
    never = hard_decoder(semi_sampling=0.0)
    never(features(), TOKENS)  # built
    never.set_weights(always.get_weights())
    sampled = to_numpy(never(features(), TOKENS, training=True)[1])
    np.testing.assert_array_equal(np.sort(sampled, -1)[..., :-1], 0.0)
    half = hard_decoder(semi_sampling=0.5)
    half(features(), TOKENS)
    half.set_weights(always.get_weights())
    soft_rows = [
        np.all(np.sort(w, -1)[..., -2] > 0)  # more than one cell read
        for _ in range(12)
        for w in to_numpy(half(features(), TOKENS, training=True)[1])
    ]
    assert 0 < sum(soft_rows) < len(soft_rows)  # some images each way


def test_reinforce_loss_and_baseline_in_training_only():
    decoder = hard_decoder()
    decoder(features(), TOKENS)
    assert not decoder.losses
    assert float(decoder.reward_baseline) == 0.0
    assert decoder.reward_baseline in decoder.non_trainable_weights
    baseline = 0.0
    for _ in range(2):
        logits, _ = decoder(features(), TOKENS, training=True)
        (loss,) = decoder.losses
        assert np.isfinite(float(loss))
        # b <- 0.9 b + 0.1 R, R the batch's mean log-likelihood per word.
        reward = np.mean(to_numpy(caption_log_likelihood(logits, TOKENS)))
        baseline = 0.9 * baseline + 0.1 * reward
        assert float(decoder.reward_baseline) == pytest.approx(
            baseline, rel=1e-5
        )
    silent = hard_decoder(reinforce_weight=0.0, entropy_weight=0.0)
    silent(features(), TOKENS, training=True)
    (loss,) = silent.losses
    assert float(loss) == 0.0


def _gradients(decoder, with_losses):
    """Gradients of the training cross-entropy (plus the added losses)
    with respect to the decoder's trainable weights."""
    targets = np.array([[5, 6, 7, 3, 0], [8, 9, 3, 0, 0]], "int32")
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0
    )
    non_trainable = [v.value for v in decoder.non_trainable_variables]

    def loss(trainable):
        (logits, _), _, losses = decoder.stateless_call(
            trainable,
            non_trainable,
            features(),
            TOKENS,
            training=True,
            return_losses=True,
        )
        total = cross_entropy(targets, logits)
        return total + sum(losses) if with_losses else total

    if keras.backend.backend() == "jax":
        import jax

        values = [v.value for v in decoder.trainable_variables]
        return jax.grad(loss)(values)
    import tensorflow as tf

    values = [tf.Variable(v.value) for v in decoder.trainable_variables]
    with tf.GradientTape() as tape:
        total = loss(values)
    return tape.gradient(total, values)


def test_the_attention_learns_from_reinforce_alone():
    """Sampling has no gradient: the likelihood trains the rest of the
    decoder, and the attention's scores learn from the REINFORCE loss."""
    decoder = hard_decoder()
    decoder(features(), TOKENS)
    scores = {id(v) for v in decoder.attention_layer.trainable_variables}
    paths = [v.path for v in decoder.trainable_variables]
    for with_losses in (False, True):
        grads = _gradients(decoder, with_losses)
        for variable, path, grad in zip(
            decoder.trainable_variables, paths, grads
        ):
            zero = grad is None or not np.any(to_numpy(grad))
            if id(variable) in scores:
                assert zero != with_losses, path
            else:
                assert not zero, path


def test_hard_training_step_under_xla_updates_the_baseline():
    inputs = {
        "features": keras.Input((L, D), name="features"),
        "tokens": keras.Input((5,), dtype="int32", name="tokens"),
    }
    decoder = hard_decoder(prediction="latent")
    logits, _ = decoder(inputs["features"], inputs["tokens"])
    model = keras.Model(inputs, logits)
    model.compile(
        "adam",
        keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=0
        ),
        jit_compile=True,
    )
    model.optimizer.build(model.trainable_variables)  # fit traces once
    targets = np.array([[5, 6, 7, 3, 0], [8, 9, 3, 0, 0]], "int32")
    data = {"features": features(), "tokens": TOKENS}
    history = model.fit(data, targets, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert float(decoder.reward_baseline) < 0  # a log-likelihood
    evaluated = model.evaluate(data, targets, verbose=0)  # no REINFORCE
    assert np.isfinite(evaluated)
