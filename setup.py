"""setuptools' build, plus one file: the checkout the wheel was built from.

The shipped models (`saved_models/`, 126 MB) stay out of the wheel. So that
`pip install .` from a checkout still finds them by name, the build writes
the checkout's folder into `attention_zoo_apps/common/built_from.txt`, which
`attention_zoo_apps.common.zoo` reads. A wheel built elsewhere (or from an
sdist) names a folder that is not there and finds the models in
`$ATTENTION_ZOO_MODELS` or the `attention-zoo-models` distribution instead
(`attention-zoo models` says so). The rest of the build is pyproject.toml's.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

CHECKOUT = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join("attention_zoo_apps", "common", "built_from.txt")


class BuildPyRecordingTheCheckout(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout itself
        target = os.path.join(self.build_lib, RECORD)
        with open(target, "w", encoding="utf-8") as file:
            file.write(CHECKOUT + "\n")


setup(cmdclass={"build_py": BuildPyRecordingTheCheckout})
