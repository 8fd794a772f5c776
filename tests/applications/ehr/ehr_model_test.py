"""build_risk_model: shapes, masks (padding-length independence), XLA,
event features, saving and errors."""

import math

import numpy as np
import pytest

from attention_zoo_apps.ehr.model import TIME_PERIODS
from attention_zoo_apps.ehr.model import EventFeatures
from attention_zoo_apps.ehr.model import attention_model
from attention_zoo_apps.ehr.model import build_risk_model
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy

CODES, WORDS = 20, 30
LENGTHS = (5, 2, 0)  # events of the three patients (the last has none)
NOTE_LENGTHS = (3, 0, 4)


def _randomize(model):
    rng = np.random.default_rng(0)
    model.set_weights(
        [rng.normal(0, 0.4, w.shape).astype("float32") for w in model.weights]
    )


def _inputs(events_length=6, note_length=5, notes=True):
    """Three patients padded to the given lengths (same real content)."""
    rng = np.random.default_rng(1)
    batch = len(LENGTHS)
    x = {
        "codes": np.zeros((batch, events_length), "int32"),
        "values": np.zeros((batch, events_length), "float32"),
        "has_value": np.zeros((batch, events_length), "float32"),
        "times": np.zeros((batch, events_length), "float32"),
    }
    for i, n in enumerate(LENGTHS):
        x["codes"][i, :n] = rng.integers(2, CODES, n)
        x["values"][i, :n] = rng.normal(size=n)
        x["has_value"][i, :n] = rng.integers(0, 2, n)
        x["times"][i, :n] = rng.uniform(0, 24, n)
    if notes:
        x["note"] = np.zeros((batch, note_length), "int32")
        for i, n in enumerate(NOTE_LENGTHS):
            x["note"][i, :n] = rng.integers(4, WORDS, n)
    return x


def _model(encoder, notes=True):
    model = build_risk_model(
        CODES,
        WORDS if notes else None,
        embedding_dim=8,
        units=8,
        encoder=encoder,
        num_heads=2,
    )
    _randomize(model)
    return model


@pytest.mark.parametrize("encoder", ["gru", "multihead"])
@pytest.mark.parametrize("notes", [True, False])
def test_shapes(encoder, notes):
    model = _model(encoder, notes)
    outputs = to_numpy(attention_model(model)(_inputs(notes=notes)))
    assert to_numpy(model(_inputs(notes=notes))).shape == (3, 1)
    assert outputs["risk"].shape == (3, 1)
    assert outputs["event_attention"].shape == (3, 6)
    assert ("note_attention" in outputs) == notes
    if notes:
        assert outputs["note_attention"].shape == (3, 5)
    assert np.all((outputs["risk"] > 0) & (outputs["risk"] < 1))


@pytest.mark.parametrize("encoder", ["gru", "multihead"])
def test_padding_length_changes_nothing(encoder):
    explainer = attention_model(_model(encoder))
    short = to_numpy(explainer(_inputs(6, 5)))
    long = to_numpy(explainer(_inputs(11, 9)))
    np.testing.assert_allclose(long["risk"], short["risk"], atol=1e-5)
    np.testing.assert_allclose(
        long["event_attention"][:, :6], short["event_attention"], atol=1e-6
    )
    np.testing.assert_allclose(
        long["note_attention"][:, :5], short["note_attention"], atol=1e-6
    )
    for key, lengths in (
        ("event_attention", LENGTHS),
        ("note_attention", NOTE_LENGTHS),
    ):
        weights = long[key]
        for i, n in enumerate(lengths):
            assert np.all(weights[i, n:] == 0.0)
            # A record with no events / no note: all weights zero.
            expected = 1.0 if n else 0.0
            np.testing.assert_allclose(weights[i].sum(), expected, atol=1e-5)


@pytest.mark.parametrize("encoder", ["gru", "multihead"])
def test_xla_matches_eager(encoder):
    explainer = attention_model(_model(encoder))
    x = _inputs()
    eager = to_numpy(explainer(x, training=False))
    compiled = to_numpy(jit(lambda x: explainer(x, training=False))(x))
    for key in eager:
        np.testing.assert_allclose(compiled[key], eager[key], atol=1e-5)


def test_event_features_reference():
    rng = np.random.default_rng(2)
    codes = np.array([[3, 4, 0]], "int32")
    values = rng.normal(size=(1, 3)).astype("float32")
    has_value = np.array([[1.0, 0.0, 0.0]], "float32")
    times = np.array([[0.5, 30.0, -2.0]], "float32")
    layer = EventFeatures(time_encoding=True)
    features = to_numpy(layer(codes, values, has_value, times))
    assert features.shape == (1, 3, 3 + 2 * len(TIME_PERIODS))
    np.testing.assert_allclose(features[..., 0], values)
    np.testing.assert_allclose(features[..., 1], has_value)
    expected = np.sign(times) * np.log1p(np.abs(times))
    np.testing.assert_allclose(features[..., 2], expected, rtol=1e-6)
    angle = times * 2 * math.pi / TIME_PERIODS[1]
    np.testing.assert_allclose(features[..., 5], np.sin(angle), atol=1e-6)
    np.testing.assert_allclose(features[..., 6], np.cos(angle), atol=1e-6)
    np.testing.assert_array_equal(
        to_numpy(layer.compute_mask(codes)), [[True, True, False]]
    )
    plain = EventFeatures(time_encoding=False)
    assert to_numpy(plain(codes, values, has_value, times)).shape == (1, 3, 3)
    assert EventFeatures.from_config(plain.get_config()).time_encoding is False


def test_time_encoding_off_and_saving(tmp_path):
    model = build_risk_model(
        CODES, WORDS, embedding_dim=8, units=8, time_encoding=False
    )
    assert_model_round_trip(model, _inputs(), tmp_path)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"encoder": "lstm"}, "encoder"),
        ({"units": 7}, "even"),
        ({"encoder": "multihead", "units": 6, "num_heads": 4}, "multiple"),
        ({"dropout": 1.0}, "dropout"),
        ({"note_vocabulary_size": 0}, "note_vocabulary_size"),
    ],
)
def test_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_risk_model(CODES, **kwargs)
