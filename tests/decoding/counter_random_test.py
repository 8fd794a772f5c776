"""`counter_random`: the hash and the noise equal a NumPy version written
here from the published constants (so TensorFlow and JAX, compiled or
not, give the same bits), and the numbers look uniform and independent."""

import numpy as np
import pytest
from keras import ops

from attention_zoo.decoding import counter_random
from tests.support.decoding_reference import MASK
from tests.support.decoding_reference import lowbias32
from tests.support.decoding_reference import np_uniform
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy


def test_the_reference_hash_is_a_bijection():
    assert int(lowbias32(0)) == 0
    values = np.arange(1 << 16, dtype="uint64") * 65537
    assert len(set(lowbias32(values).tolist())) == len(values)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_mix32_equals_numpy(compiled):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, size=1000, dtype="uint64")
    x[:3] = [0, 1, MASK]
    mix = jit(counter_random.mix32) if compiled else counter_random.mix32
    got = to_numpy(mix(ops.convert_to_tensor(x.astype("uint32"))))
    np.testing.assert_array_equal(got, lowbias32(x).astype("uint32"))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_uniform_equals_numpy(compiled):
    seeds = np.array([0, 1, 2, 7, 2**31, 2**32 - 1], "uint64")
    ids = np.arange(50)[None]

    def draw(seeds, step):
        keys = counter_random.step_keys(seeds, step)
        return counter_random.uniform(keys, ops.convert_to_tensor(ids))

    if compiled:
        draw = jit(draw)
    for step in (0, 1, 31):
        got = to_numpy(
            draw(
                ops.convert_to_tensor(seeds.astype("uint32")),
                ops.convert_to_tensor(step, "int32"),
            )
        )
        np.testing.assert_array_equal(got, np_uniform(seeds, step, ids))


def test_as_uint32_keeps_the_low_bits():
    for value in (-1, 2**32 + 5, 2**40 + 3, 7):
        assert int(to_numpy(counter_random.as_uint32(value))) == value % 2**32
    got = to_numpy(
        counter_random.as_uint32(ops.convert_to_tensor([-1, -2, 5], "int32"))
    )
    np.testing.assert_array_equal(got, [2**32 - 1, 2**32 - 2, 5])


def test_uniform_is_in_the_open_interval_and_flat():
    seeds = np.arange(200, dtype="uint32")  # consecutive seeds
    u = to_numpy(
        counter_random.uniform(
            counter_random.step_keys(ops.convert_to_tensor(seeds), 0),
            ops.convert_to_tensor(np.arange(500)[None]),
        )
    )  # (200, 500): 100,000 numbers
    assert 0.0 < u.min() and u.max() < 1.0
    # Chi-square over 20 equal bins (19 degrees of freedom): 43.8 is the
    # 0.999 quantile; a biased or repeating generator is far above.
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    expected = u.size / 20
    assert ((counts - expected) ** 2 / expected).sum() < 43.8
    # Neighbouring seeds, steps and ids are uncorrelated.
    assert abs(np.corrcoef(u[:-1].ravel(), u[1:].ravel())[0, 1]) < 0.02
    assert abs(np.corrcoef(u[:, :-1].ravel(), u[:, 1:].ravel())[0, 1]) < 0.02
    later = to_numpy(
        counter_random.uniform(
            counter_random.step_keys(ops.convert_to_tensor(seeds), 1),
            ops.convert_to_tensor(np.arange(500)[None]),
        )
    )
    assert abs(np.corrcoef(u.ravel(), later.ravel())[0, 1]) < 0.02
    assert not np.array_equal(u, later)


def test_gumbel_is_minus_log_minus_log_uniform():
    keys = counter_random.step_keys(ops.convert_to_tensor([3, 4], "uint32"), 2)
    ids = ops.convert_to_tensor(np.arange(10)[None])
    u = to_numpy(counter_random.uniform(keys, ids)).astype("float64")
    g = to_numpy(counter_random.gumbel(keys, ids))
    np.testing.assert_allclose(g, -np.log(-np.log(u)), rtol=1e-5, atol=1e-5)
