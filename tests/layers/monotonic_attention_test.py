"""MonotonicAttention: the paper's equations in NumPy, steps, masks, errors."""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import MonotonicAttention
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy

B, TQ, TV, DQ, DV, U = 2, 4, 6, 5, 3, 8
CONFIGS = {
    "additive": {"units": U},
    "general": {"score": "general"},
}


def random(*shape):
    return np.random.standard_normal(shape).astype("float32")


def set_random_weights(layer, bias=0.0):
    """Random weights (scale 1), `r = bias`; returns them by name."""
    values = {}
    for weight in layer.weights:
        value = random(*weight.shape)
        if weight.name == "score_bias":
            value = np.float32(bias)
        weight.assign(value)
        values[weight.name] = value
    return values


def np_energies(score, query, key, weights):
    """`e_ij = score(q_i, k_j) + r`, `(B, Tq, Tv)`."""
    if score == "additive":
        hidden = np.tanh(
            (query @ weights["query_kernel"])[:, :, None]
            + (key @ weights["key_kernel"] + weights["bias"])[:, None]
        )  # (B, Tq, Tv, U)
        energies = hidden @ weights["v"][:, 0]
    else:
        energies = np.einsum("bqi,ij,btj->bqt", query, weights["kernel"], key)
    return energies + weights["score_bias"]


def np_expected_alignments(p, initial):
    """The paper's eq. (9), term by term, in float64:
    `alpha_ij = p_ij sum_k<=j alpha_i-1,k prod_k<=l<j (1 - p_il)`."""
    p = p.astype("float64")
    previous, rows = initial.astype("float64"), []
    for i in range(p.shape[1]):
        alpha = np.zeros_like(previous)
        for j in range(p.shape[2]):
            for k in range(j + 1):
                stay = np.prod(1 - p[:, i, k:j], axis=-1)
                alpha[:, j] += previous[:, k] * stay
            alpha[:, j] *= p[:, i, j]
        rows.append(alpha)
        previous = alpha
    return np.stack(rows, 1)


def np_hard_alignments(p):
    """The paper's Algorithm 1 (test time), from position 0."""
    alignments = np.zeros(p.shape, "float32")
    for b in range(p.shape[0]):
        start = 0
        for i in range(p.shape[1]):
            if start is None:
                break  # nothing was attended: the rest stays zero
            chosen = [j for j in range(start, p.shape[2]) if p[b, i, j] > 0.5]
            start = chosen[0] if chosen else None
            if chosen:
                alignments[b, i, start] = 1.0
    return alignments


def energy_layer(mode="parallel", **kwargs):
    """A general-score layer whose energies are the query itself:
    one-hot keys, `W = I`, `r = 0`. Returns `(layer, keys)`."""
    layer = MonotonicAttention(score="general", mode=mode, **kwargs)
    keys = np.tile(np.eye(TV, dtype="float32"), (B, 1, 1))  # (B, Tv, Tv)
    layer(random(B, TQ, TV), random(B, TV, DV), key=keys)
    layer._scorer.kernel.assign(np.eye(TV, dtype="float32"))
    layer.score_bias.assign(0.0)
    return layer, keys


@pytest.mark.parametrize("score", sorted(CONFIGS))
def test_parallel_mode_matches_paper_equations(score):
    layer = MonotonicAttention(**CONFIGS[score])
    query, key, value = random(B, TQ, DQ), random(B, TV, DQ), random(B, TV, DV)
    mask = np.array([[1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 0, 0]], bool)
    layer(query, value, key=key)
    weights = set_random_weights(layer, bias=-0.5)
    output, alignments = layer(
        query, value, key=key, value_mask=mask, return_attention_scores=True
    )
    p = 1 / (1 + np.exp(-np_energies(score, query, key, weights)))
    p = np.where(mask[:, None], p, 0.0)
    initial = np.eye(TV)[[0, 0]]
    expected = np_expected_alignments(p, initial)
    np.testing.assert_allclose(to_numpy(alignments), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(output), expected @ value, atol=1e-5)


def test_small_case_by_hand():
    # r = 0 and W = 0: p = 1/2 everywhere. From one-hot(0):
    # row 0: 1/2, 1/4, 1/8; row 1: q = (1/2, 1/2, 3/4) -> 1/4, 1/4, 3/8.
    layer = MonotonicAttention(score="general")
    query, value = np.ones((1, 2, 1), "float32"), np.ones((1, 3, 1), "float32")
    layer(query, value)
    layer._scorer.kernel.assign(np.zeros((1, 1), "float32"))
    value = np.array([[[1.0], [2.0], [4.0]]], "float32")
    output, alignments = layer(query, value, return_attention_scores=True)
    np.testing.assert_allclose(
        to_numpy(alignments)[0],
        [[0.5, 0.25, 0.125], [0.25, 0.25, 0.1875]],
        atol=1e-7,
    )
    np.testing.assert_allclose(to_numpy(output)[0], [[1.5], [1.5]], atol=1e-6)


def test_exact_where_the_closed_form_underflows():
    # Row 0 goes to position 3; row 1 has p ~ 1 - 6e-6 on positions 0-2.
    # The closed form divides by cumprod(1 - p) = 2e-16 there, which TF
    # Addons clips to 1e-10 and so loses row 1 almost entirely.
    layer, keys = energy_layer()
    energies = np.full((B, TQ, TV), -12.0, "float32")
    energies[:, 0, 3] = 12.0
    energies[:, 1, :3] = 12.0
    energies[:, 1, 4] = 12.0
    _, alignments = layer(
        energies, random(B, TV, DV), key=keys, return_attention_scores=True
    )
    p = 1 / (1 + np.exp(-energies.astype("float64")))
    expected = np_expected_alignments(p, np.eye(TV)[[0, 0]])
    np.testing.assert_allclose(to_numpy(alignments), expected, atol=1e-6)
    assert to_numpy(alignments)[0, 1, 4] > 0.99

    # The clipped closed form, for comparison (TF Addons' `parallel`).
    p32 = p.astype("float32")[:, 1]
    cumprod = np.exp(np.cumsum(np.log(np.clip(1 - p32, 1e-38, 1)), -1))
    cumprod = np.concatenate([np.ones((B, 1)), cumprod[:, :-1]], -1)
    previous = expected[:, 0].astype("float32")
    closed = (
        p32 * cumprod * np.cumsum(previous / np.clip(cumprod, 1e-10, 1), -1)
    )
    assert closed[0, 4] < 0.01


@pytest.mark.parametrize("bias", [-4.0, 0.0, 3.0])
def test_rows_sum_to_at_most_one(bias):
    layer = MonotonicAttention(units=U, score_bias_init=bias, sigmoid_noise=1.0)
    query, value = random(B, 8, DQ), random(B, 8, DV)
    for training in (False, True):
        _, alignments = layer(
            query, value, return_attention_scores=True, training=training
        )
        alignments = to_numpy(alignments)
        assert np.all(alignments >= 0)
        assert np.all(alignments.sum(-1) <= 1 + 1e-6)


def test_hard_mode_matches_paper_algorithm_and_never_moves_back():
    layer, keys = energy_layer(mode="hard")
    for seed in range(5):
        energies = np.random.RandomState(seed).normal(-0.5, 2, (B, TQ, TV))
        energies = energies.astype("float32")
        _, alignments = layer(
            energies, random(B, TV, DV), key=keys, return_attention_scores=True
        )
        alignments = to_numpy(alignments)
        p = 1 / (1 + np.exp(-energies))
        np.testing.assert_array_equal(alignments, np_hard_alignments(p))
        for row in alignments:
            attended = row.sum(-1) == 1
            assert np.all(np.isin(row, (0.0, 1.0)))
            # Once nothing is attended, nothing is attended again.
            assert np.all(attended[: attended.sum()])
            positions = row[attended].argmax(-1)
            assert np.all(np.diff(positions) >= 0)


@pytest.mark.parametrize("mode", ["parallel", "hard"])
@pytest.mark.parametrize("score", sorted(CONFIGS))
def test_whole_sequence_equals_chained_steps(mode, score):
    layer = MonotonicAttention(mode=mode, **CONFIGS[score])
    query, value = random(B, TQ, DQ), random(B, TV, DQ)
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 0, 1, 1, 1, 1]], bool)
    layer(query, value)
    set_random_weights(layer, bias=0.5)
    output, alignments = layer(
        query, value, value_mask=mask, return_attention_scores=True
    )

    def decode(query, value):
        keys = layer.precompute_keys(value)
        alignment = layer.initial_alignment(value)
        contexts, alignments = [], []
        for t in range(TQ):
            context, alignment = layer.step(
                query[:, t],
                value,
                alignment,
                prepared_key=keys,
                value_mask=mask,
            )
            contexts.append(context)
            alignments.append(alignment)
        return ops.stack(contexts, 1), ops.stack(alignments, 1)

    for fn in (decode, jit(decode)):
        contexts, steps = fn(query, value)
        np.testing.assert_allclose(
            to_numpy(steps), to_numpy(alignments), atol=1e-6
        )
        np.testing.assert_allclose(
            to_numpy(contexts), to_numpy(output), atol=1e-5
        )


def test_initial_alignment_state_continues_a_sequence():
    layer = MonotonicAttention(units=U)
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    _, alignments = layer(query, value, return_attention_scores=True)
    _, second = layer(
        query[:, 2:],
        value,
        initial_alignment=alignments[:, 1],
        return_attention_scores=True,
    )
    np.testing.assert_allclose(
        to_numpy(second), to_numpy(alignments)[:, 2:], atol=1e-6
    )


@pytest.mark.parametrize("mode", ["parallel", "hard"])
def test_masked_values_get_exactly_zero_and_change_nothing(mode):
    layer = MonotonicAttention(units=U, mode=mode)
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    layer(query, value)
    set_random_weights(layer, bias=0.5)
    mask = np.array([[0, 1, 1, 0, 1, 1], [1, 1, 1, 1, 0, 0]], bool)
    output, alignments = layer(
        query, value, value_mask=mask, return_attention_scores=True
    )
    assert np.all(
        to_numpy(alignments)[np.broadcast_to(~mask[:, None], (B, TQ, TV))] == 0
    )
    changed = np.where(mask[..., None], value, 100.0).astype("float32")
    np.testing.assert_allclose(
        to_numpy(layer(query, changed, value_mask=mask)),
        to_numpy(output),
        atol=1e-6,
    )
    # key_mask does the same; a fully masked memory gives finite zeros.
    np.testing.assert_allclose(
        to_numpy(layer(query, value, key_mask=mask)),
        to_numpy(output),
        atol=1e-6,
    )
    empty = np.zeros((B, TV), bool)
    output = to_numpy(layer(query, value, value_mask=empty))
    assert np.all(output == 0)


@pytest.mark.parametrize("mode", ["parallel", "hard"])
def test_masked_query_is_zero_and_keeps_the_alignment(mode):
    layer = MonotonicAttention(units=U, mode=mode, score_bias_init=0.5)
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    query_mask = np.array([[1, 0, 1, 1], [1, 1, 0, 0]], bool)
    output, alignments = layer(
        query,
        value,
        query_mask=query_mask,
        return_attention_scores=True,
    )
    output, alignments = to_numpy(output), to_numpy(alignments)
    assert np.all(output[~query_mask] == 0)
    assert np.all(alignments[~query_mask] == 0)
    # Row 2 of sequence 0 follows row 0, as if row 1 were not there.
    _, skipped = layer(query[:, [0, 2, 3]], value, return_attention_scores=True)
    np.testing.assert_allclose(
        alignments[0, [0, 2, 3]], to_numpy(skipped)[0], atol=1e-6
    )


def test_noise_only_in_training():
    noisy = MonotonicAttention(units=U, sigmoid_noise=5.0, seed=3)
    clean = MonotonicAttention(units=U)
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    noisy(query, value)
    clean(query, value)
    noisy.set_weights(clean.get_weights())
    expected = to_numpy(clean(query, value))
    for training in (None, False):
        np.testing.assert_allclose(
            to_numpy(noisy(query, value, training=training)),
            expected,
            atol=1e-6,
        )
    assert not np.allclose(
        to_numpy(noisy(query, value, training=True)), expected, atol=1e-3
    )


@pytest.mark.parametrize(
    "kwargs",
    [{"units": U}, {"score": "general"}, {"units": U, "normalize": True}],
)
def test_standard_checks(kwargs):
    run_layer_test(
        MonotonicAttention,
        {**kwargs, "sigmoid_noise": 1.0, "seed": 1},
        {"query": random(B, TQ, DQ), "value": random(B, TV, DQ)},
        expected_output_shape=(B, TQ, DQ),
    )


def test_standard_checks_hard_mode_with_key_and_scores():
    output, alignments = run_layer_test(
        MonotonicAttention,
        {"units": U, "mode": "hard"},
        {
            "query": random(B, TQ, DQ),
            "value": random(B, TV, DV),
            "key": random(B, TV, 7),
        },
        expected_output_shape=(B, TQ, DV),
        call_kwargs={"return_attention_scores": True},
        run_training=False,  # the decisions have no gradient
    )
    assert keras.backend.standardize_dtype(alignments.dtype) == "float32"
    assert tuple(alignments.shape) == (B, TQ, TV)


def test_symbolic_spec_and_weights():
    layer = MonotonicAttention(units=U, score_bias_init=-4.0)
    query, value = keras.Input((None, DQ)), keras.Input((None, DV))
    output, alignments = layer(query, value, return_attention_scores=True)
    assert tuple(output.shape) == (None, None, DV)
    assert tuple(alignments.shape) == (None, None, None)
    assert alignments.dtype == "float32"
    names = sorted(w.name for w in layer.trainable_weights)
    assert names == ["bias", "key_kernel", "query_kernel", "score_bias", "v"]
    assert float(to_numpy(layer.score_bias)) == -4.0


def test_model_round_trip(tmp_path):
    query = keras.Input((None, DQ), name="query")
    value = keras.Input((None, DV), name="value")
    layer = MonotonicAttention(units=U, name="monotonic")
    model = keras.Model([query, value], layer(query, value))
    loaded = assert_model_round_trip(
        model, [random(B, TQ, DQ), random(B, TV, DV)], tmp_path
    )
    assert type(loaded.get_layer("monotonic")) is MonotonicAttention


@pytest.mark.parametrize("mode", ["parallel", "hard"])
def test_xla_with_masks_equals_eager(mode):
    layer = MonotonicAttention(units=U, mode=mode, score_bias_init=0.5)
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    masks = {
        "query_mask": np.array([[1, 1, 0, 1], [1, 1, 1, 1]], bool),
        "value_mask": np.array([[1, 1, 1, 0, 0, 1], [1] * TV], bool),
    }
    expected = to_numpy(layer(query, value, **masks))
    compiled = jit(lambda q, v: layer(q, v, **masks))
    np.testing.assert_allclose(
        to_numpy(compiled(query, value)), expected, atol=1e-5
    )


def _embedding_model(layer, implicit):
    tokens = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, DQ, mask_zero=implicit)
    x = embedding(tokens)
    if implicit:
        output = layer(x, x)
    else:
        mask = keras.layers.Identity()(tokens) != 0
        output = layer(x, x, query_mask=mask, value_mask=mask)
    return keras.Model(tokens, output), embedding


def test_implicit_mask_equals_explicit_and_is_carried():
    tokens = np.array([[3, 1, 4, 0, 0], [5, 9, 2, 6, 0]], "int32")
    layer = MonotonicAttention(units=U)
    implicit, embedding = _embedding_model(layer, implicit=True)
    explicit, other = _embedding_model(layer, implicit=False)
    other.set_weights(embedding.get_weights())
    expected = to_numpy(explicit(tokens))
    np.testing.assert_allclose(to_numpy(implicit(tokens)), expected, atol=1e-6)
    assert np.all(expected[tokens == 0] == 0)
    assert getattr(implicit.outputs[0], "_keras_mask", None) is not None


def test_mixed_precision_close_to_float32():
    query, value = 3 * random(B, TQ, DQ), random(B, TV, DV)
    layers = {}
    for policy in ("float32", "mixed_bfloat16"):
        layers[policy] = MonotonicAttention(units=U, dtype=policy)
        layers[policy](query, value)
    layers["mixed_bfloat16"].set_weights(layers["float32"].get_weights())
    expected = layers["float32"](query, value, return_attention_scores=True)
    output, alignments = layers["mixed_bfloat16"](
        query, value, return_attention_scores=True
    )
    assert keras.backend.standardize_dtype(output.dtype) == "bfloat16"
    assert keras.backend.standardize_dtype(alignments.dtype) == "float32"
    output = to_numpy(ops.cast(output, "float32"))
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, to_numpy(expected[0]), atol=5e-2)
    np.testing.assert_allclose(
        to_numpy(alignments), to_numpy(expected[1]), atol=2e-2
    )


def test_gradients_reach_every_weight():
    layer = MonotonicAttention(units=U, normalize=True)
    query, value = random(B, TQ, DQ), random(B, TV, DV)
    layer(query, value)
    target = random(B, TQ, DV)

    def loss_fn(weights):
        output, _ = layer.stateless_call(weights, [], query, value)
        return ops.mean(ops.square(output - target))

    if keras.backend.backend() == "jax":
        import jax

        grads = jax.grad(loss_fn)([w.value for w in layer.trainable_weights])
    else:
        import tensorflow as tf

        weights = [tf.Variable(w.value) for w in layer.trainable_weights]
        with tf.GradientTape() as tape:
            loss = loss_fn(weights)
        grads = tape.gradient(loss, weights)
    for grad, weight in zip(grads, layer.trainable_weights):
        assert np.any(to_numpy(grad) != 0), weight.name


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"units": U, "score": "dot"}, "score"),
        ({"units": U, "mode": "recursive"}, "mode"),
        ({"units": 0}, "units"),
        ({"score": "general", "units": U}, "units"),
        ({"score": "general", "normalize": True}, "normalize"),
        ({"units": U, "sigmoid_noise": -1.0}, "sigmoid_noise"),
        ({"units": U, "sigmoid_noise": "1"}, "sigmoid_noise"),
        ({"units": U, "score_bias_init": None}, "score_bias_init"),
        ({"units": U, "score_bias_init": float("nan")}, "score_bias_init"),
    ],
)
def test_invalid_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        MonotonicAttention(**kwargs)


def test_call_needs_a_sequence_of_queries_and_step_a_built_layer():
    layer = MonotonicAttention(units=U)
    with pytest.raises(ValueError, match="built"):
        layer.step(random(B, DQ), random(B, TV, DV), np.eye(TV)[[0, 0]])
    with pytest.raises(ValueError, match="query_shape"):
        layer(random(B, DQ), random(B, TV, DV))
