"""Writes `torch.save` files without PyTorch, for the reader's tests.

The pickles are made by Python's own pickler, with stand-ins for
`torch.FloatStorage`, `torch.LongStorage` and
`torch._utils._rebuild_tensor_v2` registered under torch's module names
while writing, so the files name the same globals and persistent ids as
PyTorch's (checked against the real package's file where it is installed).
"""

import collections
import contextlib
import pickle
import sys
import types
import zipfile

import numpy as np

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
_STORAGES = {"float32": "FloatStorage", "int64": "LongStorage"}

# A view of a 1-D storage array, as a torch tensor holds it.
TensorView = collections.namedtuple(
    "TensorView", ["storage", "offset", "shape", "stride"]
)


def save_torch_state_dict(path, arrays, layout="legacy"):
    """Writes `{name: np.ndarray | TensorView}` as PyTorch would.

    Arrays become contiguous tensors with a storage each; `TensorView`s
    share their `storage` array with every view of the same object.
    `layout` is `"legacy"` or `"zip"`.
    """
    storages = {}  # id(storage array) -> (key, array)
    tensors = collections.OrderedDict()
    for name, value in arrays.items():
        if not isinstance(value, TensorView):
            value = np.ascontiguousarray(value)  # ravel()'s order
            strides = [s // value.itemsize for s in value.strides]
            value = TensorView(value.ravel(), 0, value.shape, strides)
        key, _ = storages.setdefault(
            id(value.storage), (str(len(storages)), value.storage)
        )
        tensors[name] = _Tensor(key, value)
    with _fake_torch() as torch:
        if layout == "legacy":
            _write_legacy(path, tensors, storages, torch)
        else:
            _write_zip(path, tensors, storages, torch)


class _Tensor:
    def __init__(self, key, view):
        self.key = key
        self.view = view


class _Pickler(pickle.Pickler):
    def __init__(self, file, torch, legacy):
        super().__init__(file, protocol=2)
        self.torch = torch
        self.legacy = legacy

    def persistent_id(self, obj):
        if not isinstance(obj, _Storage):
            return None
        storage_type = getattr(self.torch, _STORAGES[obj.array.dtype.name])
        pid = ("storage", storage_type, obj.key, "cpu", obj.array.size)
        return pid + (None,) if self.legacy else pid

    def reducer_override(self, obj):
        if not isinstance(obj, _Tensor):
            return NotImplemented
        view = obj.view
        arguments = (
            _Storage(obj.key, view.storage),
            view.offset,
            tuple(view.shape),
            tuple(view.stride),
            False,
            collections.OrderedDict(),
        )
        return self.torch._utils._rebuild_tensor_v2, arguments


class _Storage:
    def __init__(self, key, array):
        self.key = key
        self.array = array


def _write_legacy(path, tensors, storages, torch):
    with open(path, "wb") as file:
        pickle.dump(LEGACY_MAGIC, file, protocol=2)
        pickle.dump(LEGACY_PROTOCOL, file, protocol=2)
        system = {"protocol_version": LEGACY_PROTOCOL, "little_endian": True}
        pickle.dump(system, file, protocol=2)
        _Pickler(file, torch, legacy=True).dump(tensors)
        keys = sorted(key for key, _ in storages.values())
        pickle.dump(keys, file, protocol=2)
        arrays = dict(storages.values())
        for key in keys:
            file.write(arrays[key].size.to_bytes(8, "little", signed=True))
            file.write(
                arrays[key]
                .astype(arrays[key].dtype.newbyteorder("<"))
                .tobytes()
            )


def _write_zip(path, tensors, storages, torch):
    with zipfile.ZipFile(path, "w") as archive:
        with archive.open("archive/data.pkl", "w") as file:
            _Pickler(file, torch, legacy=False).dump(tensors)
        archive.writestr("archive/byteorder", "little")
        for key, array in storages.values():
            archive.writestr(f"archive/data/{key}", array.tobytes())


@contextlib.contextmanager
def _fake_torch():
    """Modules `torch` and `torch._utils` with the names pickles refer to,
    in `sys.modules` while writing (the pickler checks them there)."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*args):
        raise AssertionError("only for writing")

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    torch._utils = utils
    for name in _STORAGES.values():
        setattr(torch, name, type(name, (), {"__module__": "torch"}))
    saved = {name: sys.modules.get(name) for name in ("torch", "torch._utils")}
    sys.modules.update({"torch": torch, "torch._utils": utils})
    try:
        yield torch
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
