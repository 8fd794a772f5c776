"""`metadata.json`'s parts: `jit_compile` defaults to on only with a GPU,
and the training data's fingerprint is stable and tells data apart. The
metadata of the applications' exports is checked in
`tests/applications/common/export_metadata_test.py`."""

import hashlib

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import data_fingerprint
from attention_zoo.export import resolve_jit_compile


def test_default_jit_compile_is_on_only_with_a_gpu(monkeypatch):
    for devices, expected in (([], False), (["GPU:0"], True)):
        monkeypatch.setattr(
            tf.config, "list_physical_devices", lambda kind=None: devices
        )
        assert resolve_jit_compile(None) is expected
    assert resolve_jit_compile(False) is False
    with pytest.raises(ValueError, match="jit_compile"):
        resolve_jit_compile("on")


def test_data_fingerprint_is_stable_and_tells_data_apart():
    examples = [("ab", "c", 1), ("dog", np.arange(3, dtype="int32"), None)]
    assert data_fingerprint(examples) == data_fingerprint(list(examples))
    assert data_fingerprint([]) == hashlib.sha256().hexdigest()
    different = [
        [("a", "bc", 1), examples[1]],
        [examples[0], ("dog", np.arange(3, dtype="int64"), None)],
        [examples[0], ("dog", np.arange(3, dtype="int32")[None], None)],
        [examples[0], ("dog", np.arange(3, dtype="int32"), 0)],
        [examples[1], examples[0]],
    ]
    for other in different:
        assert data_fingerprint(other) != data_fingerprint(examples)
    with pytest.raises(TypeError, match="object"):
        data_fingerprint([object()])
