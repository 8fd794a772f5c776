"""The public API: every exported class is registered and reachable."""

import importlib

import keras
import pytest

import attention_zoo
from attention_zoo.api_export import EXPORTED


def test_something_is_exported():
    assert len(EXPORTED) >= 1


@pytest.mark.parametrize("path", sorted(EXPORTED))
def test_exported_name_resolves_and_is_registered(path):
    cls = EXPORTED[path]
    module_name, name = path.rsplit(".", 1)
    module = importlib.import_module(module_name)
    assert getattr(module, name) is cls
    assert name in module.__all__
    registered = keras.saving.get_registered_name(cls)
    assert registered == f"attention_zoo>{cls.__name__}"
    assert keras.saving.get_registered_object(registered) is cls


def test_every_public_layer_is_exported_at_the_top_level():
    for path, cls in EXPORTED.items():
        assert getattr(attention_zoo, cls.__name__) is cls, path
