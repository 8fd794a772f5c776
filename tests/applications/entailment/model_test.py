"""build_decomposable_attention: NumPy reference of attend / compare /
aggregate, masks, XLA, saving, the baseline and errors."""

import keras
import numpy as np
import pytest

from attention_zoo_apps.entailment.model import alignment_model
from attention_zoo_apps.entailment.model import build_decomposable_attention
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import np_softmax
from tests.support.layer_checks import to_numpy

VOCAB, EMB, HID = 30, 6, 5
PREMISE = np.array([[3, 4, 5, 6, 0, 0], [7, 8, 0, 0, 0, 0]], "int32")
HYPOTHESIS = np.array([[9, 10, 11, 0], [12, 13, 14, 15]], "int32")


def _randomize(model):
    rng = np.random.default_rng(0)
    model.set_weights(
        [rng.normal(0, 0.5, w.shape).astype("float32") for w in model.weights]
    )


def _dense(layer):
    return to_numpy(layer.kernel), to_numpy(layer.bias)


def _relu_net(x, layers):
    for kernel, bias in layers:
        x = np.maximum(x @ kernel + bias, 0.0)
    return x


def np_decomposable_attention(model, premise, hypothesis):
    """Textbook eqs. 15.46-15.53 for one pair, on its real words only."""
    table = to_numpy(model.get_layer("embedding").embeddings)
    projection = to_numpy(model.get_layer("projection").kernel)
    attend = model.get_layer("attend")
    f = [
        _dense(layer)
        for layer in attend.key_network
        if hasattr(layer, "kernel")
    ]
    g = [_dense(model.get_layer(f"compare_dense_{i}")) for i in range(2)]
    h = [_dense(model.get_layer(f"classify_dense_{i}")) for i in range(2)]
    kernel, bias = _dense(model.get_layer("logits"))
    a = table[premise[premise > 0]] @ projection  # (m, HID)
    b = table[hypothesis[hypothesis > 0]] @ projection  # (n, HID)
    e = _relu_net(a, f) @ _relu_net(b, f).T  # (m, n)       eq. 15.46
    a_to_b = np_softmax(e, axis=1)
    beta = a_to_b @ b  # eq. 15.47
    alpha = np_softmax(e, axis=0).T @ a  # eq. 15.50
    v_a = _relu_net(np.concatenate([a, beta], 1), g).sum(0)  # 15.48-49
    v_b = _relu_net(np.concatenate([b, alpha], 1), g).sum(0)  # 15.51-52
    hidden = _relu_net(np.concatenate([v_a, v_b]), h)
    return np_softmax(hidden @ kernel + bias), a_to_b  # eq. 15.53


def _inputs(premise=PREMISE, hypothesis=HYPOTHESIS):
    return {"premise": premise, "hypothesis": hypothesis}


def test_matches_numpy_reference_and_alignment():
    model = build_decomposable_attention(VOCAB, EMB, HID, dropout=0.1)
    _randomize(model)
    explained = alignment_model(model)
    outputs = to_numpy(explained(_inputs()))
    assert outputs["probabilities"].shape == (2, 3)
    assert outputs["alignment"].shape == (2, 6, 4)
    for row in range(2):
        probabilities, a_to_b = np_decomposable_attention(
            model, PREMISE[row], HYPOTHESIS[row]
        )
        np.testing.assert_allclose(
            outputs["probabilities"][row], probabilities, atol=1e-5
        )
        m, n = a_to_b.shape
        np.testing.assert_allclose(
            outputs["alignment"][row, :m, :n], a_to_b, atol=1e-5
        )
        assert np.all(outputs["alignment"][row, m:] == 0)
        assert np.all(outputs["alignment"][row, :, n:] == 0)
    np.testing.assert_allclose(
        to_numpy(model(_inputs())), outputs["probabilities"], atol=1e-6
    )


@pytest.mark.parametrize(
    "options",
    [{}, {"intra_attention": True}, {"attention": False}],
    ids=["attention", "intra", "baseline"],
)
def test_padding_does_not_change_predictions(options):
    model = build_decomposable_attention(VOCAB, EMB, HID, **options)
    _randomize(model)
    short = to_numpy(model(_inputs(PREMISE[:1, :4], HYPOTHESIS[:1, :3])))
    wide = np.pad(PREMISE[:1], [[0, 0], [0, 9]])
    long = to_numpy(model(_inputs(wide, HYPOTHESIS[:1])))
    np.testing.assert_allclose(long, short, atol=1e-6)


def test_baseline_compares_each_word_with_nothing():
    model = build_decomposable_attention(VOCAB, EMB, HID, attention=False)
    _randomize(model)
    # A bag of words: the order of the words does not matter.
    shuffled = PREMISE[:, [2, 0, 3, 1, 4, 5]]
    shuffled[1] = PREMISE[1, [1, 0, 2, 3, 4, 5]]
    np.testing.assert_allclose(
        to_numpy(model(_inputs(shuffled))),
        to_numpy(model(_inputs())),
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="no alignment"):
        alignment_model(model)
    full = build_decomposable_attention(VOCAB, EMB, HID)
    assert model.count_params() < full.count_params()


def test_intra_attention_adds_distance_biases_and_trains():
    model = build_decomposable_attention(
        VOCAB, EMB, HID, intra_attention=True, max_distance=3
    )
    bias = model.get_layer("intra_attention").distance_bias
    assert tuple(bias.shape) == (7,)
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=True)
    model.optimizer.build(model.trainable_variables)  # fit traces once
    labels = np.array([0, 2], "int32")
    before = model.evaluate(_inputs(), labels, verbose=0)
    # 30 steps on the two examples, in one epoch (30 epochs of one step
    # each spent about 1.2 s more in Keras's per-epoch work).
    repeated = {k: np.tile(v, (30, 1)) for k, v in _inputs().items()}
    model.fit(
        repeated, np.tile(labels, 30), batch_size=2, shuffle=False, verbose=0
    )
    assert model.evaluate(_inputs(), labels, verbose=0) < before


def test_xla_equals_eager_and_mixed_precision(tmp_path):
    model = build_decomposable_attention(VOCAB, EMB, HID, intra_attention=True)
    _randomize(model)
    eager = to_numpy(model(_inputs()))
    compiled = to_numpy(jit(lambda x: model(x))(_inputs()))
    np.testing.assert_allclose(compiled, eager, atol=1e-5)
    assert_model_round_trip(model, _inputs(), tmp_path)
    keras.config.set_dtype_policy("mixed_bfloat16")
    mixed = build_decomposable_attention(VOCAB, EMB, HID, intra_attention=True)
    mixed.set_weights([w * 20 for w in model.get_weights()])  # large scores
    out = to_numpy(mixed(_inputs()))
    assert out.dtype == np.float32 and np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-5)


def test_pretrained_embeddings_start_the_table():
    table = np.random.default_rng(1).normal(size=(VOCAB, EMB)).astype("float32")
    model = build_decomposable_attention(VOCAB, EMB, HID, embeddings=table)
    np.testing.assert_array_equal(
        to_numpy(model.get_layer("embedding").embeddings), table
    )
    assert model.get_layer("embedding").trainable
    with pytest.raises(ValueError, match="embeddings"):
        build_decomposable_attention(VOCAB, EMB + 1, HID, embeddings=table)


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="vocabulary_size"):
        build_decomposable_attention(0)
    with pytest.raises(ValueError, match="hidden_units"):
        build_decomposable_attention(VOCAB, hidden_units=-2)
    with pytest.raises(ValueError, match="dropout"):
        build_decomposable_attention(VOCAB, dropout=1.5)
