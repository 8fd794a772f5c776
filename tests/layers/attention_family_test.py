"""The attention family: every member is a `BaseAttention`, and its
documented defaults build a working layer."""

import numpy as np
import pytest

from attention_zoo.layers import AdditiveAttention
from attention_zoo.layers import BaseAttention
from attention_zoo.layers import BilinearAttention
from attention_zoo.layers import HardAttention
from attention_zoo.layers import KernelRegressionAttention
from attention_zoo.layers import LocalAttention
from attention_zoo.layers import MonotonicAttention
from tests.support.layer_checks import to_numpy

B, TQ, TV, DQ, DK = 2, 3, 5, 4, 6


@pytest.mark.parametrize(
    "make",
    [
        lambda: HardAttention(),
        lambda: LocalAttention(),
        lambda: LocalAttention(mode="predictive"),
        lambda: LocalAttention(score="additive"),
        lambda: MonotonicAttention(),
        lambda: MonotonicAttention(score="general"),
        lambda: BilinearAttention(),
        lambda: KernelRegressionAttention(),
    ],
)
def test_documented_defaults_build_a_working_layer(make):
    layer = make()
    assert isinstance(layer, BaseAttention)
    rng = np.random.default_rng(0)
    dq = DK if isinstance(layer, KernelRegressionAttention) else DQ
    query = rng.normal(size=(B, TQ, dq)).astype("float32")
    value = rng.normal(size=(B, TV, DK)).astype("float32")
    output, weights = layer(query, value, return_attention_scores=True)
    assert output.shape == (B, TQ, DK)
    assert weights.shape == (B, TQ, TV)
    assert np.all(np.isfinite(to_numpy(output)))


@pytest.mark.parametrize(
    "make",
    [
        lambda: HardAttention(),
        lambda: MonotonicAttention(),
        lambda: LocalAttention(score="additive"),
    ],
)
def test_units_default_to_the_width_of_the_key(make):
    layer = make()
    key = np.ones((B, TV, DK + 1), "float32")
    layer(np.ones((B, TQ, DQ), "float32"), np.ones((B, TV, 2)), key=key)
    scorer = layer._scorer
    assert isinstance(scorer, AdditiveAttention)
    assert scorer.units == DK + 1
    assert tuple(scorer.key_kernel.shape) == (DK + 1, DK + 1)
    assert layer.get_config()["units"] is None  # inferred again on load


def test_local_p_position_network_defaults_to_the_width_of_the_key():
    layer = LocalAttention(mode="predictive")
    layer(np.ones((B, TQ, DQ), "float32"), np.ones((B, TV, DK), "float32"))
    assert tuple(layer.position_kernel.shape) == (DQ, DK)
    assert tuple(layer.position_v.shape) == (DK, 1)


@pytest.mark.parametrize("cls", [HardAttention, MonotonicAttention])
def test_members_without_dropout_refuse_it(cls):
    with pytest.raises(TypeError, match="dropout"):
        cls(dropout=0.1)
    assert "dropout" not in cls().get_config()
