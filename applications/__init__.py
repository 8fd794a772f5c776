"""Deprecated: the applications are the package `attention_zoo_apps`.

Before, they were `applications`, a top-level name that other projects use
too, and `pip install .` put it into site-packages. It no longer does;
from a checkout of this repository the old imports README documented
(`from applications.translation import Translator`) still work, with a
`DeprecationWarning`: every `applications.X` is the module
`attention_zoo_apps.X` itself (the same classes, registered with Keras
once), not a second copy.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

NEW_NAME = "attention_zoo_apps"


class _SameModule(importlib.abc.Loader):
    """Loads `applications.X` as the module `attention_zoo_apps.X`."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.spec  # the import system set the alias's


class _OldNames(importlib.abc.MetaPathFinder):
    """Finds `applications.X` where `attention_zoo_apps.X` is."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        new = NEW_NAME + fullname[len(__name__) :]
        if importlib.util.find_spec(new) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _SameModule(new))


warnings.warn(
    "the package `applications` is now `attention_zoo_apps`: "
    f"import {NEW_NAME} instead (`applications` will be removed)",
    DeprecationWarning,
    stacklevel=2,
)
if not any(isinstance(finder, _OldNames) for finder in sys.meta_path):
    sys.meta_path.insert(0, _OldNames())
sys.modules[__name__] = importlib.import_module(NEW_NAME)
