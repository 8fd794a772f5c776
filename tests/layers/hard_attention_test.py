"""HardAttention: argmax and expectation against NumPy, sampling
frequencies, masks, the REINFORCE terms, XLA, serialization."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import HardAttention
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, TQ, TV, D, DV, U = 2, 3, 6, 5, 4, 8
SCORES = ("additive", "general", "dot", "scaled_dot")
MASK = np.array([[1, 1, 0, 1, 1, 0], [1, 0, 1, 1, 0, 0]], bool)


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def make(score="additive", **kwargs):
    if score == "additive":
        kwargs.setdefault("units", U)
    return HardAttention(score=score, **kwargs)


def set_random_weights(layer):
    values = {}
    for weight in layer.weights:
        values[weight.name] = random(*weight.shape)
        weight.assign(values[weight.name])
    return values


def np_scores(score, query, key, weights):
    if score == "additive":
        hidden = np.tanh(
            (query @ weights["query_kernel"])[:, :, None]
            + (key @ weights["key_kernel"] + weights["bias"])[:, None]
        )
        return hidden @ weights["v"][:, 0]
    if score == "general":
        return np.einsum("bqi,ij,btj->bqt", query, weights["kernel"], key)
    scores = np.einsum("bqd,btd->bqt", query, key)
    return scores / np.sqrt(D) if score == "scaled_dot" else scores


def np_hard_attention(scores, value, mask, inference):
    """`(output, weights, log_prob, entropy)`: the argmax position's value
    (or the expectation), its log-probability and the entropy."""
    alpha = np_softmax(np.where(mask[:, None], scores, -1e9)) * mask[:, None]
    position = np.argmax(np.where(mask[:, None], scores, -np.inf), -1)
    chosen = np.eye(scores.shape[-1])[position]  # (B, Tq, Tv)
    weights = chosen if inference == "argmax" else alpha
    log_alpha = np.log(np.where(alpha > 0, alpha, 1.0))
    log_prob = np.sum(chosen * log_alpha, -1)
    entropy = -np.sum(alpha * log_alpha, -1)
    return weights @ value, weights, log_prob, entropy


def all_outputs(layer, *args, **kwargs):
    return [
        to_numpy(x)
        for x in layer(
            *args,
            return_attention_scores=True,
            return_reinforce_terms=True,
            **kwargs,
        )
    ]


@pytest.mark.parametrize("inference", ["argmax", "expectation"])
@pytest.mark.parametrize("score", SCORES)
def test_matches_numpy_reference(score, inference):
    layer = make(score, inference=inference)
    query, key, value = random(B, TQ, D), random(B, TV, D), random(B, TV, DV)
    layer(query, value, key=key)
    weights = set_random_weights(layer)
    outputs = all_outputs(layer, query, value, key=key, value_mask=MASK)
    expected = np_hard_attention(
        np_scores(score, query, key, weights), value, MASK, inference
    )
    for actual, wanted in zip(outputs, expected):
        np.testing.assert_allclose(actual, wanted, atol=1e-5)


def test_small_case_by_hand():
    # Dot scores q . k = 0, 1, 2 (position 3 masked): alpha = softmax.
    layer = HardAttention(score="dot")
    query = np.array([[[1.0]]], "float32")
    key = np.array([[[0.0], [1.0], [2.0], [9.0]]], "float32")
    value = np.array([[[10.0], [20.0], [30.0], [40.0]]], "float32")
    mask = np.array([[1, 1, 1, 0]], bool)
    output, weights, log_prob, entropy = all_outputs(
        layer, query, value, key=key, value_mask=mask
    )
    alpha = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_array_equal(weights[0, 0], [0, 0, 1, 0])
    assert output[0, 0, 0] == 30.0  # copied, not mixed
    np.testing.assert_allclose(log_prob[0, 0], np.log(alpha[2]), atol=1e-6)
    np.testing.assert_allclose(
        entropy[0, 0], -np.sum(alpha * np.log(alpha)), atol=1e-6
    )
    layer.inference = "expectation"
    expectation = to_numpy(layer(query, value, key=key, value_mask=mask))
    np.testing.assert_allclose(expectation[0, 0, 0], alpha @ [10, 20, 30])


def _draws(layer, query, key, mask, count):
    """`count` samples per query row: positions `(count, Tq)` and their
    log-probabilities, read through a value that is the identity."""
    queries = np.repeat(query, count, axis=0)
    keys = np.repeat(key, count, axis=0)
    identity = np.broadcast_to(np.eye(TV, dtype="float32"), (count, TV, TV))
    output, log_prob, _ = layer(
        queries,
        identity,
        key=keys,
        value_mask=np.repeat(mask, count, axis=0),
        return_reinforce_terms=True,
        training=True,
    )
    output = to_numpy(output)
    np.testing.assert_array_equal(output.sum(-1), 1.0)  # one-hot rows
    return output.argmax(-1), to_numpy(log_prob)


def test_sampling_frequencies_match_the_distribution():
    layer = make("general", seed=7)
    query, key = random(1, TQ, D), random(1, TV, D) * 0.5
    mask = MASK[:1]
    layer(query, key, key=key)
    alpha_layer = make("general", inference="expectation")
    alpha_layer(query, key, key=key)
    alpha_layer.set_weights(layer.get_weights())
    # (Tq, Tv): the distribution, read through an identity value.
    alpha = to_numpy(
        alpha_layer(
            query, np.eye(TV, dtype="float32")[None], key=key, value_mask=mask
        )
    )[0]
    count = 4000
    positions, log_prob = _draws(layer, query, key, mask, count)
    frequencies = np.stack(
        [np.bincount(positions[:, t], minlength=TV) / count for t in range(TQ)]
    )
    # 4000 draws: the standard error of a frequency is at most 0.008.
    np.testing.assert_allclose(frequencies, alpha, atol=0.03)
    assert np.all(frequencies[:, ~mask[0]] == 0)  # masked: never drawn
    np.testing.assert_allclose(
        log_prob, np.log(alpha[np.arange(TQ), positions]), atol=1e-5
    )


def test_fixed_seed_repeats_the_draws():
    query, key = random(1, TQ, D), random(1, TV, D)
    first, second = make(seed=3), make(seed=3)
    first(query, key)
    second(query, key)
    second.set_weights(first.get_weights())
    mask = np.ones((1, TV), bool)
    draws = _draws(first, query, key, mask, 200)[0]
    np.testing.assert_array_equal(
        _draws(second, query, key, mask, 200)[0], draws
    )
    assert np.any(_draws(first, query, key, mask, 200)[0] != draws)


def test_masked_positions_are_never_drawn_even_when_favoured():
    layer = HardAttention(score="dot", seed=0)
    query = np.ones((1, 1, 1), "float32")
    key = np.array([[[50.0], [0.0], [50.0], [-3.0], [0.0], [1.0]]], "float32")
    mask = np.array([[0, 1, 0, 1, 1, 1]], bool)
    positions, _ = _draws(layer, query, key, mask, 2000)
    assert set(np.unique(positions)) <= {1, 3, 4, 5}


@pytest.mark.parametrize("training", [False, True])
def test_masks(training):
    layer = make(seed=1)
    query, value = random(B, TQ, D), random(B, TV, DV)
    layer(query, value)
    twin = make(seed=1)
    twin(query, value)
    twin.set_weights(layer.get_weights())
    output = to_numpy(layer(query, value, value_mask=MASK, training=training))
    changed = np.where(MASK[..., None], value, 100.0).astype("float32")
    np.testing.assert_allclose(
        to_numpy(twin(query, changed, value_mask=MASK, training=training)),
        output,
        atol=1e-6,
    )
    query_mask = np.array([[1, 0, 1], [0, 0, 1]], bool)
    empty = np.array([[0] * TV, [1] * TV], bool)
    results = all_outputs(
        layer,
        query,
        value,
        query_mask=query_mask,
        value_mask=empty,
        training=training,
    )
    for result in results:
        assert np.all(np.isfinite(result))
        assert np.all(result[0] == 0)  # every position masked
        assert np.all(result[1][~query_mask[1]] == 0)  # masked queries
    assert np.all(results[0][1][query_mask[1]] != 0)


def _embedding_model(layer, implicit):
    tokens = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, D, mask_zero=implicit)
    x = embedding(tokens)
    if implicit:
        output = layer(x, x)
    else:
        mask = keras.layers.Identity()(tokens) != 0
        output = layer(x, x, query_mask=mask, value_mask=mask)
    return keras.Model(tokens, output), embedding


def test_implicit_mask_equals_explicit_and_is_carried():
    tokens = np.array([[3, 1, 4, 0, 0], [5, 9, 2, 6, 0]], "int32")
    layer = make()
    implicit, embedding = _embedding_model(layer, implicit=True)
    explicit, other = _embedding_model(layer, implicit=False)
    other.set_weights(embedding.get_weights())
    expected = to_numpy(explicit(tokens))
    np.testing.assert_allclose(to_numpy(implicit(tokens)), expected, atol=1e-6)
    assert np.all(expected[tokens == 0] == 0)
    assert getattr(implicit.outputs[0], "_keras_mask", None) is not None


def test_decoder_steps_equal_the_whole_sequence():
    layer = make("general")
    query, value = random(B, TQ, D), random(B, TV, DV)
    output, weights, log_prob, entropy = all_outputs(
        layer, query, value, value_mask=MASK
    )
    keys = layer.precompute_keys(value)

    def decode(query, keys, value):
        def step(t, outputs):
            context = layer.attend(
                ops.take(query, t, axis=1), keys, value, value_mask=MASK
            )  # (B, dv)
            return ops.slice_update(
                outputs, (0, t, 0), ops.expand_dims(context, 1)
            )

        return ops.fori_loop(0, TQ, step, ops.zeros((B, TQ, DV)))

    np.testing.assert_allclose(
        to_numpy(jit(decode)(query, keys, value)), output, atol=1e-6
    )
    step = all_outputs(layer, query[:, 1], value, value_mask=MASK)
    for actual, wanted in zip(step, (output, weights, log_prob, entropy)):
        np.testing.assert_allclose(actual, wanted[:, 1], atol=1e-6)


def _stateless(layer, *args, **kwargs):
    """`layer(*args, **kwargs)` by `stateless_call`, so that the sampling's
    seed state can be traced by `jax.jit` too."""

    def call(trainable, non_trainable, *args):
        outputs, _ = layer.stateless_call(
            trainable, non_trainable, *args, **kwargs
        )
        return outputs

    return call


def test_training_draws_under_xla_are_valid_and_inference_equals_eager():
    layer = make(seed=2)
    query, value = random(B, TQ, D), random(B, TV, DV)
    expected = to_numpy(layer(query, value, value_mask=MASK))
    compiled = jit(lambda q, v: layer(q, v, value_mask=MASK))
    np.testing.assert_allclose(
        to_numpy(compiled(query, value)), expected, atol=1e-6
    )
    sample = jit(
        _stateless(
            layer,
            value_mask=MASK,
            return_attention_scores=True,
            training=True,
        )
    )
    trainable = [v.value for v in layer.trainable_variables]
    non_trainable = [v.value for v in layer.non_trainable_variables]
    output, weights = (
        to_numpy(x) for x in sample(trainable, non_trainable, query, value)
    )
    np.testing.assert_array_equal(weights.sum(-1), 1.0)
    assert np.all(weights[np.broadcast_to(~MASK[:, None], weights.shape)] == 0)
    np.testing.assert_allclose(output, weights @ value, atol=1e-6)


def test_gradients_reach_the_scores_only_through_the_reinforce_terms():
    layer = make(seed=0)
    query, value = random(B, TQ, D), random(B, TV, DV)
    layer(query, value)
    target = random(B, TQ, DV)

    def losses(weights):
        output, log_prob, entropy = layer.stateless_call(
            weights,
            [v.value for v in layer.non_trainable_variables],
            query,
            value,
            return_reinforce_terms=True,
            training=True,
        )[0]
        fit = ops.mean(ops.square(output - target))
        return fit, ops.mean(log_prob) + ops.mean(entropy)

    variables = layer.trainable_weights
    if keras.backend.backend() == "jax":
        import jax

        values = [w.value for w in variables]
        fit = jax.grad(lambda w: losses(w)[0])(values)
        terms = jax.grad(lambda w: losses(w)[1])(values)
    else:
        import tensorflow as tf

        values = [tf.Variable(w.value) for w in variables]
        with tf.GradientTape(persistent=True) as tape:
            fit, terms = losses(values)
        fit, terms = tape.gradient(fit, values), tape.gradient(terms, values)
    for fit_grad, terms_grad, weight in zip(fit, terms, variables):
        assert fit_grad is None or np.all(to_numpy(fit_grad) == 0), weight.name
        assert np.any(to_numpy(terms_grad) != 0), weight.name


@pytest.mark.parametrize("compiled", [False, True])
def test_examples_that_read_the_expectation_are_soft_in_training(compiled):
    """Semi-sampling: the marked examples read `alpha @ value` with
    log-probability 0; the others sample as before."""
    layer = make(seed=3)
    query, value = random(B, TQ, D), random(B, TV, DV)
    layer(query, value)
    weights = set_random_weights(layer)
    read = np.array([True, False])

    def call(query, value, read):
        return layer(
            query,
            value,
            value_mask=MASK,
            read_expectation=read,
            return_attention_scores=True,
            return_reinforce_terms=True,
            training=True,
        )

    call = jit(call) if compiled else call
    output, used, log_prob, entropy = (
        to_numpy(x) for x in call(query, value, read)
    )
    _, alpha, _, wanted_entropy = np_hard_attention(
        np_scores("additive", query, value, weights), value, MASK, "expectation"
    )
    np.testing.assert_allclose(used[0], alpha[0], atol=1e-5)
    np.testing.assert_allclose(output[0], alpha[0] @ value[0], atol=1e-5)
    np.testing.assert_array_equal(log_prob[0], 0.0)
    np.testing.assert_allclose(entropy, wanted_entropy, atol=1e-5)
    # The other example read one sampled, unmasked position.
    assert np.all(np.sort(used[1], -1)[:, :-1] == 0)
    np.testing.assert_allclose(used[1].sum(-1), 1.0)
    assert np.all(used[1][:, ~MASK[1]] == 0)
    np.testing.assert_allclose(output[1], used[1] @ value[1], atol=1e-5)
    picked = np.log(np.sum(used[1] * alpha[1], -1))
    np.testing.assert_allclose(log_prob[1], picked, atol=1e-5)
    # Outside training the flag changes nothing.
    plain = layer(query, value, value_mask=MASK)
    flagged = layer(query, value, value_mask=MASK, read_expectation=read)
    np.testing.assert_array_equal(to_numpy(plain), to_numpy(flagged))


def test_fit_under_xla_with_a_reinforce_loss():
    query = keras.Input((None, D), name="query")
    value = keras.Input((None, DV), name="value")
    output, log_prob, entropy = make(seed=0)(
        query, value, return_reinforce_terms=True
    )
    model = keras.Model([query, value], [output, log_prob, entropy])
    # Stand-ins: the likelihood on the output, the terms on the scores.
    model.compile("sgd", ["mse", "mse", "mse"], jit_compile=True)
    model.optimizer.build(model.trainable_variables)  # fit traces once
    inputs = [random(B, TQ, D), random(B, TV, DV)]
    targets = [np.zeros((B, TQ, DV)), np.zeros((B, TQ)), np.zeros((B, TQ))]
    history = model.fit(inputs, targets, batch_size=B, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"score": "additive", "units": U},
        {"score": "general", "inference": "expectation"},
    ],
)
def test_standard_checks(kwargs):
    run_layer_test(
        HardAttention,
        kwargs,
        {"query": random(B, TQ, D), "value": random(B, TV, D)},
        expected_output_shape=(B, TQ, D),
        expected_num_trainable_weights=4
        if kwargs["score"] == "additive"
        else 1,
        # The output's gradient reaches no weight: a REINFORCE fit is
        # `test_fit_under_xla_with_a_reinforce_loss`.
        run_training=False,
    )


def test_model_round_trip(tmp_path):
    query = keras.Input((None, D), name="query")
    value = keras.Input((None, DV), name="value")
    layer = make("general", inference="expectation", seed=4, name="hard")
    model = keras.Model([query, value], layer(query, value))
    loaded = assert_model_round_trip(
        model, [random(B, TQ, D), random(B, TV, DV)], tmp_path
    )
    assert type(loaded.get_layer("hard")) is HardAttention
    assert loaded.get_layer("hard").inference == "expectation"


def test_mixed_precision_selects_exactly_and_keeps_terms_float32():
    query, value = random(B, TQ, D), random(B, TV, DV) * 300
    value = to_numpy(ops.cast(ops.cast(value, "bfloat16"), "float32"))
    layers = {}
    for policy in ("float32", "mixed_bfloat16"):
        layers[policy] = make("general", dtype=policy)
        layers[policy](query, value)
    layers["mixed_bfloat16"].set_weights(layers["float32"].get_weights())
    exact = all_outputs(layers["float32"], query, value, value_mask=MASK)
    output, weights, log_prob, entropy = layers["mixed_bfloat16"](
        query,
        value,
        value_mask=MASK,
        return_attention_scores=True,
        return_reinforce_terms=True,
    )
    assert keras.backend.standardize_dtype(output.dtype) == "bfloat16"
    assert log_prob.dtype == "float32" and entropy.dtype == "float32"
    output = to_numpy(ops.cast(output, "float32"))
    selected = to_numpy(ops.cast(weights, "float32")).argmax(-1)
    # The bfloat16 value at the chosen position, copied bit for bit.
    np.testing.assert_array_equal(
        output, np.stack([value[b, selected[b]] for b in range(B)])
    )
    np.testing.assert_allclose(to_numpy(entropy), exact[3], atol=0.05)
    np.testing.assert_allclose(to_numpy(log_prob), exact[2], atol=0.1)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"score": "location"}, "score"),
        ({"inference": "sample"}, "inference"),
        ({"units": 0}, "units"),
        ({"score": "dot", "units": 4}, "units"),
    ],
)
def test_invalid_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        HardAttention(**kwargs)
