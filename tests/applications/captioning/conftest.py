"""Fixtures of the captioning tests: 48 generated shapes images and a
tiny captioner trained on the first 40 (once per test session, shared by
the test files and xdist workers: tests read it, never change it)."""

import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.captioning.captioner import Captioner
from attention_zoo_apps.captioning.shapes import make_synthetic_shapes
from tests.support.shared_bundles import shared_bundle


def _shapes():
    return make_synthetic_shapes(48, image_size=32, seed=0)


@pytest.fixture(scope="module")
def shapes():
    return _shapes()


def _train_captioner(folder):
    shapes = _shapes()
    captioner = Captioner(registry.get("captioning").tiny_config())
    captioner.fit(shapes.images[:40], shapes.captions[:40], verbose=0)
    return captioner


@pytest.fixture(scope="session")
def captioner(shared):
    return shared_bundle(shared, "captioning-tiny", Captioner, _train_captioner)
