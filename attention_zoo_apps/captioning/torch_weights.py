"""`read_torch_state_dict`: a PyTorch state dict as NumPy arrays, no torch.

Why not PyTorch itself: a CPU wheel is about 750 MB installed, to read
17 MB of arrays once (the result is cached as `.npz`).

Why a restricted unpickler: a `.pth` is a pickle, and unpickling calls
whatever importable callable the file names, so `pickle.load` on a
downloaded file can run any code. A state dict needs only
`collections.OrderedDict`, `torch._utils._rebuild_tensor_v2` and the
`torch.*Storage` classes; every other global is refused (the policy of
`torch.load(weights_only=True)`), the stand-ins below return plain data,
and tensor views are bounds-checked against their storage before any
array is made.

Two layouts, both holding the same pickle, whose tensors name their
storage by a persistent id `("storage", torch.FloatStorage, key,
location, numel)`:

- legacy (`torch.save(..., _use_new_zipfile_serialization=False)`, the
  default before PyTorch 1.6): five pickles in a row (magic number,
  protocol version, system info, the object, the list of storage keys),
  then each storage's bytes in that order, after its int64 element count;
- zip (PyTorch >= 1.6): `<root>/data.pkl` and one `<root>/data/<key>`
  file of raw bytes per storage.
"""

import collections
import os
import pickle
import zipfile

import numpy as np

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
# torch storage classes -> little-endian NumPy dtypes.
STORAGE_DTYPES = {
    "DoubleStorage": "<f8",
    "FloatStorage": "<f4",
    "HalfStorage": "<f2",
    "LongStorage": "<i8",
    "IntStorage": "<i4",
    "ShortStorage": "<i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}


def read_torch_state_dict(path):
    """Reads a `torch.save`d dict of tensors into NumPy arrays.

    Args:
        path: str or path-like, a `.pth` / `.pt` file in the legacy or the
            zip layout.

    Returns:
        A dict `{name: np.ndarray}` in the file's order.

    Raises:
        ValueError: naming `path`, for anything but a dict of tensors of
            the supported dtypes, and for any other global in the pickle.
    """
    path = os.fspath(path)
    try:
        if zipfile.is_zipfile(path):
            state = _read_zip(path)
        else:
            with open(path, "rb") as file:
                state = _read_legacy(file)
    except (pickle.UnpicklingError, EOFError, ValueError, KeyError) as error:
        raise ValueError(
            f"{path}: not a readable PyTorch state dict: {error}"
        ) from error
    if not isinstance(state, dict) or not all(
        isinstance(key, str) and isinstance(value, _Tensor)
        for key, value in state.items()
    ):
        raise ValueError(f"{path}: not a state dict (a dict of tensors).")
    try:
        return {key: tensor.to_numpy() for key, tensor in state.items()}
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error


def _read_legacy(file):
    unpickler = _StateDictUnpickler(file)
    if unpickler.load() != LEGACY_MAGIC:
        raise ValueError("not a PyTorch file (wrong magic number)")
    if _StateDictUnpickler(file).load() != LEGACY_PROTOCOL:
        raise ValueError("unsupported legacy protocol version")
    system = _StateDictUnpickler(file).load()
    if not isinstance(system, dict) or not system.get("little_endian"):
        raise ValueError("only little-endian files are supported")
    unpickler = _StateDictUnpickler(file)
    state = unpickler.load()
    keys = _StateDictUnpickler(file).load()
    for key in keys:
        storage = unpickler.storages.get(key)
        if storage is None:
            raise ValueError(f"storage {key!r} is not used by any tensor")
        numel = int.from_bytes(file.read(8), "little", signed=True)
        if numel != storage.numel:
            raise ValueError(
                f"storage {key!r} holds {numel} elements, "
                f"{storage.numel} expected"
            )
        storage.fill(file.read(numel * np.dtype(storage.dtype).itemsize))
    return state


def _read_zip(path):
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [name for name in names if name.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise ValueError("a zip without one '<root>/data.pkl'")
        root = pickles[0][: -len("data.pkl")]
        if f"{root}byteorder" in names:
            if archive.read(f"{root}byteorder").strip() != b"little":
                raise ValueError("only little-endian files are supported")
        with archive.open(pickles[0]) as file:
            unpickler = _StateDictUnpickler(file)
            state = unpickler.load()
        for key, storage in unpickler.storages.items():
            storage.fill(archive.read(f"{root}data/{key}"))
    return state


class _StorageType:
    """Stands in for a `torch.*Storage` class: only its dtype matters."""

    def __init__(self, name):
        self.dtype = STORAGE_DTYPES[name]


class _Storage:
    """One storage: its declared element count, then its bytes."""

    def __init__(self, key, dtype, numel):
        self.key = key
        self.dtype = dtype
        self.numel = numel
        self.array = None

    def fill(self, data):
        itemsize = np.dtype(self.dtype).itemsize
        if len(data) < self.numel * itemsize:
            raise ValueError(f"storage {self.key!r} is truncated")
        self.array = np.frombuffer(data, self.dtype, count=self.numel)


class _Tensor:
    """A view `(offset, size, stride)` of a storage, read once it is
    filled (the legacy layout stores the bytes after the pickle)."""

    def __init__(self, storage, offset, size, stride):
        if not isinstance(storage, _Storage):
            raise pickle.UnpicklingError("a tensor without a storage")
        self.storage = storage
        self.offset = int(offset)
        self.size = tuple(int(n) for n in size)
        self.stride = tuple(int(s) for s in stride)

    def to_numpy(self):
        array = self.storage.array
        if array is None:
            raise ValueError(f"storage {self.storage.key!r} has no data")
        if (
            len(self.size) != len(self.stride)
            or min((self.offset,) + self.size + self.stride, default=0) < 0
        ):
            raise ValueError(f"a bad view of storage {self.storage.key!r}")
        if 0 in self.size:
            return np.zeros(self.size, array.dtype)
        # The last element the view reads must lie inside the storage:
        # as_strided itself would read past its end.
        last = self.offset + sum(
            (n - 1) * s for n, s in zip(self.size, self.stride)
        )
        if last >= array.size:
            raise ValueError(
                f"a view past the end of storage {self.storage.key!r}"
            )
        strides = [s * array.itemsize for s in self.stride]
        view = np.lib.stride_tricks.as_strided(
            array[self.offset :], self.size, strides, writeable=False
        )
        return np.array(view)  # a copy that owns its memory


def _rebuild_tensor(storage, offset, size, stride, *unused):
    # torch._utils._rebuild_tensor(_v2): the remaining arguments
    # (requires_grad, backward hooks, metadata) mean nothing for arrays.
    return _Tensor(storage, offset, size, stride)


class _StateDictUnpickler(pickle.Unpickler):
    """Unpickles only dicts of tensors (see the module docstring)."""

    def __init__(self, file):
        super().__init__(file)
        self.storages = {}

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name in (
            "_rebuild_tensor_v2",
            "_rebuild_tensor",
        ):
            return _rebuild_tensor
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(
            f"refusing the global {module}.{name}: a state dict holds "
            "only tensors and OrderedDicts"
        )

    def persistent_load(self, pid):
        if (
            not isinstance(pid, tuple)
            or len(pid) < 5
            or pid[0] != "storage"
            or not isinstance(pid[1], _StorageType)
            or not isinstance(pid[4], int)
        ):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        _, storage_type, key, _, numel = pid[:5]
        storage = self.storages.get(key)
        if storage is None:
            storage = _Storage(key, storage_type.dtype, numel)
            self.storages[key] = storage
        return storage
