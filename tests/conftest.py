import os
import pathlib

import keras
import numpy as np
import pytest

SHARED_DATA = pathlib.Path(
    os.environ.get(
        "ATTENTION_ZOO_SHARED_DATA",
        pathlib.Path(__file__).resolve().parents[2] / "shared" / "data",
    )
)


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(0)
    np.random.seed(0)
    policy = keras.config.dtype_policy()
    yield
    keras.config.set_dtype_policy(policy)


@pytest.fixture
def shared_data():
    """`../shared/data`; tests that need it skip cleanly where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
