"""Integrated gradients and occlusion of the EHR risk, and Kendall tau:
completeness, an analytic linear case, occlusion equal to re-running the
model without the event, zero on padding, tau against a pair count;
comprehensiveness / sufficiency against re-running the model, and the
planted-code recall by hand."""

import itertools

import keras
import numpy as np
import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.ehr import attributions
from attention_zoo_apps.ehr import faithfulness
from attention_zoo_apps.ehr.model import build_risk_model
from attention_zoo_apps.ehr.risk_model import RiskModel
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients

TINY = registry.get("ehr").tiny_config()


def _inputs(seed=0):
    """Two records, 4 and 2 events, padded to 6; a note of 3 and 2 ids."""
    rng = np.random.default_rng(seed)
    codes = np.array([[3, 4, 5, 9, 0, 0], [6, 7, 0, 0, 0, 0]], "int32")
    return {
        "codes": codes,
        "values": rng.normal(size=codes.shape).astype("float32"),
        "has_value": (rng.random(codes.shape) < 0.5).astype("float32"),
        "times": (10 * rng.normal(size=codes.shape)).astype("float32"),
        "note": np.array([[1, 2, 3, 0], [4, 5, 0, 0]], "int32"),
    }


def _model(encoder, seed=0):
    keras.utils.set_random_seed(seed)
    return build_risk_model(
        20, 30, embedding_dim=8, units=8, encoder=encoder, num_heads=2
    )


@pytest.mark.parametrize("encoder", ["gru", "multihead"])
def test_integrated_gradients_are_complete(encoder):
    model = _model(encoder)
    inputs = _inputs()
    result = attributions.integrated_gradients(model, inputs, steps=64)
    expected = model(inputs, training=False).numpy()[:, 0]
    np.testing.assert_allclose(result["risk"], expected, atol=1e-6)
    # sum_j IG_j = f(x) - f(x'), up to the trapezoid rule's error.
    np.testing.assert_allclose(
        result["attributions"].sum(-1),
        result["risk"] - result["baseline_risk"],
        atol=3e-4,
    )
    # Padding gets nothing.
    assert np.all(result["attributions"][inputs["codes"] == 0] == 0.0)


def test_integrated_gradients_of_a_linear_model_are_exact():
    """`f = b + w . mean_j x_j` over the real events: `IG_j = w . (x_j -
    mean x) / n` for the record-average baseline, whatever the steps."""
    codes = keras.Input((None,), dtype="int32", name="codes")
    x = keras.layers.Embedding(10, 4, mask_zero=True, name="event_inputs")(
        codes
    )
    pooled = keras.layers.GlobalAveragePooling1D()(x)  # masked mean
    risk = keras.layers.Dense(1, name="risk")(pooled)
    model = keras.Model({"codes": codes}, risk)
    inputs = {"codes": np.array([[1, 2, 3, 0], [4, 5, 0, 0]], "int32")}
    result = attributions.integrated_gradients(model, inputs, steps=2)
    table = model.get_layer("event_inputs").embeddings.numpy()
    w = model.get_layer("risk").kernel.numpy()[:, 0]
    for row, ids in enumerate(inputs["codes"]):
        real = ids[ids != 0]
        events = table[real]  # (n, D)
        expected = (events - events.mean(0)) @ w / len(real)
        np.testing.assert_allclose(
            result["attributions"][row, : len(real)], expected, atol=1e-6
        )
        assert np.all(result["attributions"][row, len(real) :] == 0.0)


@pytest.mark.parametrize("encoder", ["gru", "multihead"])
def test_occlusion_equals_the_risk_without_the_event(encoder):
    model = _model(encoder, seed=1)
    inputs = _inputs(seed=1)
    scores = attributions.occlusion(model, inputs, batch_size=3)
    full = model(inputs, training=False).numpy()[:, 0]
    for row in range(2):
        count = int((inputs["codes"][row] != 0).sum())
        for j in range(count):
            # The record without event j, re-padded at the end.
            dropped = {
                key: np.pad(
                    np.delete(value[row : row + 1], j, axis=1),
                    [(0, 0), (0, 1)],
                )
                for key, value in inputs.items()
                if key != "note"
            }
            dropped["note"] = inputs["note"][row : row + 1]
            without = model(dropped, training=False).numpy()[0, 0]
            assert scores[row, j] == pytest.approx(
                full[row] - without, abs=1e-5
            )
        assert np.all(scores[row, count:] == 0.0)


def test_note_word_occlusion_removes_a_whole_group():
    model = _model("gru", seed=2)
    inputs = _inputs(seed=2)
    groups = np.array([[0, 0, 1, -1], [0, 1, -1, -1]])
    scores = attributions.occlusion(model, inputs, key="note", groups=groups)
    without = dict(inputs, note=np.array([[0, 0, 3, 0]] * 2, "int32"))
    full = model(inputs, training=False).numpy()[0, 0]
    expected = full - model(without, training=False).numpy()[0, 0]
    assert scores[0, 0] == scores[0, 1] == pytest.approx(expected, abs=1e-5)
    assert scores[0, 3] == 0.0 and scores[1, 2] == 0.0


def test_padding_content_changes_no_attribution():
    model = _model("multihead", seed=3)
    inputs = _inputs(seed=3)
    noisy = {key: value.copy() for key, value in inputs.items()}
    padding = inputs["codes"] == 0
    noisy["values"][padding] = 99.0
    noisy["times"][padding] = -50.0
    for method in (
        lambda i: attributions.integrated_gradients(model, i, 8)[
            "attributions"
        ],
        lambda i: attributions.occlusion(model, i),
    ):
        np.testing.assert_allclose(method(noisy), method(inputs), atol=1e-5)


def _tau_b_by_pairs(a, b):
    """Kendall tau-b by counting all pairs."""
    concordant = discordant = ties_a = ties_b = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        if da == 0 and db == 0:
            continue
        if da == 0:
            ties_a += 1
        elif db == 0:
            ties_b += 1
        elif da == db:
            concordant += 1
        else:
            discordant += 1
    untied_a = concordant + discordant + ties_b  # pairs not tied in a
    untied_b = concordant + discordant + ties_a
    return (concordant - discordant) / np.sqrt(untied_a * untied_b)


def test_kendall_tau_matches_a_pair_count():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 5, 9).astype("float64")  # with ties
        b = a + rng.integers(-2, 3, 9)
        chosen = attributions.top_union(a, b, top_k=4)
        if np.ptp(a[chosen]) == 0 or np.ptp(b[chosen]) == 0:
            continue
        assert attributions.kendall_tau(a, b, top_k=4) == pytest.approx(
            _tau_b_by_pairs(a[chosen], b[chosen])
        )
    # By hand: the same order is 1, the reverse -1, over the union.
    assert attributions.kendall_tau([3, 2, 1], [3, 2, 1], 2) == 1.0
    assert attributions.kendall_tau([3, 2, 1], [1, 2, 3], 1) == -1.0
    assert np.isnan(attributions.kendall_tau([1.0], [1.0]))


def test_uniform_attention_is_the_masked_mean():
    """With the pooling replaced by a mean, the risk still ignores
    padding, and differs from the attention model's."""
    model = _model("gru", seed=4)
    inputs = _inputs(seed=4)
    uniform = attributions.uniform_attention_risk(model, inputs)
    values = np.where(inputs["codes"] == 0, 9.0, inputs["values"])
    noisy = dict(inputs, values=values.astype("float32"))
    np.testing.assert_allclose(
        attributions.uniform_attention_risk(model, noisy), uniform, atol=1e-6
    )
    assert uniform.shape == (2,) and np.all(np.isfinite(uniform))


def test_attribute_records_cover_the_events_read():
    records = make_synthetic_patients(3, seed=1).records
    risk_model = RiskModel(TINY.replace(max_events=20))
    risk_model.ensure_assets(records)
    risk_model.ensure_model()
    output = attributions.attribute_records(risk_model, records, steps=8)
    predicted = risk_model.predict(records)
    np.testing.assert_allclose(output["risk"], predicted["risk"], atol=1e-5)
    for i in range(3):
        kept = min(20, len(records.codes[i]))
        np.testing.assert_array_equal(
            output["event_index"][i],
            np.arange(len(records.codes[i]) - kept, len(records.codes[i])),
        )
        for name in ("attention", "integrated_gradients", "occlusion"):
            assert output[name][i].shape == (kept,)
        np.testing.assert_allclose(
            output["attention"][i], predicted["event_attention"][i], atol=1e-6
        )
    assert output["tau_occlusion"].shape == (3,)


def test_note_word_occlusion_glues_pieces():
    records = make_synthetic_patients(2, seed=4).records
    risk_model = RiskModel(TINY)
    risk_model.ensure_assets(make_synthetic_patients(30, seed=0).records)
    risk_model.ensure_model()
    words = attributions.note_word_occlusion(risk_model, records)
    for i, row in enumerate(words):
        assert [w for w, _ in row] == [
            w.replace("##", "") for w in _glued(risk_model, records.notes[i])
        ]
        assert all(np.isfinite(score) for _, score in row)


def _glued(risk_model, note):
    """The note's words as the tokenizer's pieces glue back."""
    ids = risk_model.note_tokenizer.tokenize([note]).to_list()[0]
    ids = ids[-risk_model.config.max_note_tokens :]
    pieces = [risk_model.note_tokenizer.vocabulary[i] for i in ids]
    words = []
    for piece in pieces:
        if piece.startswith("##") and words:
            words[-1] += piece[2:]
        else:
            words.append(piece)
    return words


def test_comprehensiveness_and_sufficiency_remove_the_top_events():
    records = make_synthetic_patients(2, seed=6).records
    risk_model = RiskModel(TINY.replace(max_events=12))
    risk_model.ensure_assets(records)
    risk_model.ensure_model()
    arrays = risk_model.encode(records)
    index = arrays.pop("event_index")
    model = risk_model.require_model()
    lengths = [int((row >= 0).sum()) for row in index]
    ranking = faithfulness.random_rankings(lengths, seed=1)
    figures = faithfulness.comprehensiveness_sufficiency(
        risk_model, records, {"random": ranking}, k=2
    )
    for row in range(2):
        columns = np.flatnonzero(index[row] >= 0)
        top = columns[np.argsort(-ranking[row])[:2]]
        one = {key: value[row : row + 1] for key, value in arrays.items()}
        full = model(one, training=False).numpy()[0, 0]
        removed = one["codes"].copy()
        removed[0, top] = 0
        alone = np.zeros_like(one["codes"])
        alone[0, top] = one["codes"][0, top]
        without = model(dict(one, codes=removed), training=False)
        only = model(dict(one, codes=alone), training=False)
        assert figures["random"]["comprehensiveness"][row] == pytest.approx(
            full - float(without[0, 0]), abs=1e-5
        )
        assert figures["random"]["sufficiency"][row] == pytest.approx(
            full - float(only[0, 0]), abs=1e-5
        )


def test_planted_recall_by_hand():
    event_index = [np.array([2, 3, 4, 5]), np.array([0, 1]), np.array([7])]
    scores = [np.array([0.1, 0.9, 0.5, 0.2]), np.array([1.0, 0.0]), [1.0]]
    planted = [[3, 5], [1], []]  # the third has none: not counted
    # Top 2: {3, 4} catches 1 of 2; {0, 1} catches the 1 of 1.
    assert faithfulness.planted_recall(
        event_index, scores, planted, k=2
    ) == pytest.approx((0.5 + 1.0) / 2)
    # Top 1: {3} catches 1 of min(1, 2); {0} misses.
    assert faithfulness.planted_recall(
        event_index, scores, planted, k=1
    ) == pytest.approx(0.5)
