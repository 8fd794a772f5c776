"""CaptionAdapter with the shared `attention_zoo.decoding.decode`."""

import numpy as np
import pytest

from attention_zoo.decoding import decode
from attention_zoo_apps.captioning.adapter import CaptionAdapter
from attention_zoo_apps.captioning.adapter import attention_maps
from attention_zoo_apps.captioning.model import build_captioner
from attention_zoo_apps.common.wordpiece import END_ID
from attention_zoo_apps.common.wordpiece import START_ID
from tests.support.layer_checks import to_numpy

V = 20


@pytest.fixture(scope="module")
def model():
    return build_captioner(V, image_size=32, embedding_dim=8, units=16)


def images():
    return np.random.default_rng(0).random((3, 32, 32, 3)).astype("float32")


def _decode(adapter, max_length, **kwargs):
    return to_numpy(
        decode(
            adapter,
            images(),
            start_id=START_ID,
            end_id=END_ID,
            max_length=max_length,
            **kwargs,
        )
    )


def test_greedy_decoding_follows_the_teacher_forced_model(model):
    adapter = CaptionAdapter(model)
    assert adapter.grid == (8, 8)  # the small CNN stops at 8 x 8
    out = _decode(adapter, 6)  # compiled with XLA
    assert out["tokens"].shape == (3, 6)
    # Feeding the decoded words back with teacher forcing gives logits
    # whose argmax is the next decoded word at every generated step.
    tokens = np.concatenate(
        [np.full((3, 1), 2, "int32"), out["tokens"][:, :-1]], axis=1
    )
    logits = to_numpy(model({"image": images(), "caption_in": tokens}))
    for row in range(3):
        length = out["lengths"][row]
        np.testing.assert_array_equal(
            logits[row, :length].argmax(-1), out["tokens"][row, :length]
        )
    # The attention comes back as one 8 x 8 heatmap per step.
    assert out["attention"].shape == (3, 6, 8, 8)
    flat = np.reshape(out["attention"], (3, 6, 64))
    np.testing.assert_array_equal(
        to_numpy(attention_maps(flat, adapter.grid)), out["attention"]
    )
    eager = _decode(adapter, 6, jit_compile=False)
    np.testing.assert_array_equal(eager["tokens"], out["tokens"])
    np.testing.assert_allclose(eager["attention"], out["attention"], atol=1e-5)


def test_beam_one_equals_greedy(model):
    adapter = CaptionAdapter(model)
    greedy = _decode(adapter, 5)
    beam = _decode(adapter, 5, beam_size=1)
    np.testing.assert_array_equal(beam["tokens"], greedy["tokens"])
    np.testing.assert_allclose(beam["scores"], greedy["scores"], atol=1e-5)
    wide = _decode(adapter, 5, beam_size=3)
    assert np.all(wide["scores"] >= greedy["scores"] - 1e-5)
