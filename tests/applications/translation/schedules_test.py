"""`WarmupInverseSqrt` against the formula written in NumPy, and inside
an optimizer: the rate each update uses."""

import keras
import numpy as np
import pytest

from attention_zoo_apps.common.flag_checks import UsageError
from attention_zoo_apps.common.flag_checks import check_flag_values
from attention_zoo_apps.translation import flags
from attention_zoo_apps.translation import train
from attention_zoo_apps.translation.schedules import WarmupInverseSqrt
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator


def _reference(peak, warmup, steps):
    n = np.asarray(steps, "float64") + 1
    return peak * np.minimum(n / warmup, np.sqrt(warmup / n))


def test_matches_the_formula():
    schedule = WarmupInverseSqrt(2e-3, warmup_steps=100)
    steps = [0, 1, 49, 98, 99, 100, 399, 9999]
    found = [float(schedule(step)) for step in steps]
    np.testing.assert_allclose(found, _reference(2e-3, 100, steps), 1e-6)
    # Up to the peak at the 100th update, down after it.
    assert found[4] == pytest.approx(2e-3)
    assert found[:5] == sorted(found[:5])
    assert found[4:] == sorted(found[4:], reverse=True)
    # Vaswani et al.: d^-0.5 min(n^-0.5, n w^-1.5) with d = 256, w = 4000.
    vaswani = WarmupInverseSqrt(256**-0.5 * 4000**-0.5, warmup_steps=4000)
    for n in (1, 4000, 20000):
        expected = 256**-0.5 * min(n**-0.5, n * 4000**-1.5)
        assert float(vaswani(n - 1)) == pytest.approx(expected, 1e-6)


def test_an_optimizer_uses_the_rate_of_each_update():
    schedule = WarmupInverseSqrt(1e-2, warmup_steps=3)
    weight = keras.Variable(np.zeros(1, "float32"))
    optimizer = keras.optimizers.SGD(schedule)
    rates = []
    for _ in range(6):
        rates.append(float(optimizer.learning_rate))
        before = float(weight.numpy()[0])
        optimizer.apply_gradients([(np.ones(1, "float32"), weight)])
        # SGD: the step taken is the rate of this update.
        assert before - float(weight.numpy()[0]) == pytest.approx(rates[-1])
    np.testing.assert_allclose(rates, _reference(1e-2, 3, range(6)), 1e-6)


def test_config_round_trips_and_bad_values_are_named():
    schedule = WarmupInverseSqrt(5e-4, warmup_steps=8000)
    copy = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert isinstance(copy, WarmupInverseSqrt)
    assert (copy.peak, copy.warmup_steps) == (5e-4, 8000)
    with pytest.raises(ValueError, match="warmup_steps=0"):
        WarmupInverseSqrt(1e-3, warmup_steps=0)
    with pytest.raises(ValueError, match="peak=-1"):
        WarmupInverseSqrt(-1, warmup_steps=10)


def test_the_flags_give_the_translator_its_schedule():
    parser = flags.train_parser()
    argv = ["--learning-rate-schedule", "inverse_sqrt", "--warmup-steps", "3"]
    config = train._config(parser.parse_args(argv), synthetic=True)
    assert (config.learning_rate_schedule, config.warmup_steps) == (
        "inverse_sqrt",
        3,
    )
    translator = Translator(config.replace(epochs=1, batch_size=16))
    pairs = make_synthetic_pairs(80, seed=0).pairs
    translator.fit(pairs, verbose=0)
    optimizer = translator.model.optimizer
    updates = int(optimizer.iterations.numpy())
    assert updates == 5  # 80 pairs in batches of 16
    expected = _reference(config.learning_rate, 3, [updates])[0]
    assert float(optimizer.learning_rate) == pytest.approx(expected, 1e-6)
    plain = train._config(parser.parse_args([]), synthetic=True)
    assert Translator(plain).learning_rate() == plain.learning_rate
    with pytest.raises(UsageError, match="--warmup-steps must be a positive"):
        check_flag_values(parser.parse_args(["--warmup-steps", "0"]))
