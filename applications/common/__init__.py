"""Text and data helpers shared by the applications.

`SubwordTokenizer` is imported when first used, so that importing a module
of this package (the command's `startup`, `serving`) does not start
TensorFlow.
"""

import importlib

__all__ = ["SubwordTokenizer"]


def __getattr__(name):
    if name == "SubwordTokenizer":
        module = importlib.import_module("applications.common.wordpiece")
        return module.SubwordTokenizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
