"""`SmoothedSparseCrossentropy` against a NumPy reference: the
cross-entropy with the one-hot target smoothed to `(1 - e) one_hot + e /
V`, the mean over the tokens that are not padding."""

import keras
import numpy as np
import pytest

from attention_zoo_apps.common.flag_checks import UsageError
from attention_zoo_apps.common.flag_checks import check_flag_values
from attention_zoo_apps.translation import flags
from attention_zoo_apps.translation import train
from attention_zoo_apps.translation.label_smoothing import (
    SmoothedSparseCrossentropy,
)
from attention_zoo_apps.translation.translator import Translator


def _reference(targets, logits, smoothing, ignore_class=0):
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    vocabulary = logits.shape[-1]
    smoothed = (1 - smoothing) * np.eye(vocabulary)[targets]
    smoothed += smoothing / vocabulary
    losses = -(smoothed * log_probs).sum(-1)
    valid = targets != ignore_class
    return losses[valid].mean()


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    targets = rng.integers(1, 11, size=(3, 7))
    targets[0, 4:] = 0  # padding
    targets[2, 1:] = 0
    logits = rng.normal(scale=3.0, size=(3, 7, 11)).astype("float32")
    return targets, logits


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_matches_numpy(smoothing):
    targets, logits = _batch()
    loss = SmoothedSparseCrossentropy(smoothing)
    found = float(loss(targets, logits))
    assert found == pytest.approx(_reference(targets, logits, smoothing), 1e-5)


def test_without_smoothing_it_is_keras_sparse_crossentropy():
    targets, logits = _batch(1)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0
    )
    found = float(SmoothedSparseCrossentropy(0.0)(targets, logits))
    assert found == pytest.approx(float(keras_loss(targets, logits)), 1e-5)


def test_mixed_precision_logits_are_scored_in_float32():
    targets, logits = _batch(2)
    logits = 40.0 * logits  # a float16 softmax would overflow
    found = SmoothedSparseCrossentropy(0.1)(targets, logits.astype("float16"))
    reference = _reference(targets, logits.astype("float16").astype("f4"), 0.1)
    assert np.isfinite(float(found))
    assert float(found) == pytest.approx(reference, 1e-4)


def test_config_round_trips_and_bad_values_are_named():
    loss = SmoothedSparseCrossentropy(0.2, ignore_class=None)
    copy = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(copy, SmoothedSparseCrossentropy)
    assert (copy.smoothing, copy.ignore_class) == (0.2, None)
    with pytest.raises(ValueError, match="smoothing=1.0"):
        SmoothedSparseCrossentropy(1.0)


def test_the_flag_sets_the_config_and_the_training_loss():
    parser = flags.train_parser()
    args = parser.parse_args(["--label-smoothing", "0.1"])
    config = train._config(args, synthetic=True)
    assert config.label_smoothing == 0.1
    loss = Translator(config).compile_arguments()["loss"]
    assert isinstance(loss, SmoothedSparseCrossentropy)
    assert loss.smoothing == 0.1
    plain = train._config(parser.parse_args([]), synthetic=True)
    assert plain.label_smoothing == 0.0
    loss = Translator(plain).compile_arguments()["loss"]
    assert isinstance(loss, keras.losses.SparseCategoricalCrossentropy)
    with pytest.raises(UsageError, match="--label-smoothing must be at"):
        check_flag_values(parser.parse_args(["--label-smoothing", "1"]))
