"""Fixtures of the captioning tests: 48 generated shapes images and a
tiny captioner trained on the first 40 (one per test module)."""

import pytest

from applications import registry
from applications.captioning.captioner import Captioner
from applications.captioning.shapes import make_synthetic_shapes


@pytest.fixture(scope="module")
def shapes():
    return make_synthetic_shapes(48, image_size=32, seed=0)


@pytest.fixture(scope="module")
def captioner(shapes):
    captioner = Captioner(registry.get("captioning").tiny_config())
    captioner.fit(shapes.images[:40], shapes.captions[:40], verbose=0)
    return captioner
