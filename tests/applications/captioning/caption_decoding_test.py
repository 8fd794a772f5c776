"""CaptionDecoder with the shared greedy / beam search."""

import numpy as np
import pytest

from applications.captioning.decoding import CaptionDecoder
from applications.captioning.decoding import attention_maps
from applications.captioning.decoding import decode_captions
from applications.captioning.model import build_captioner
from tests.test_case import jit
from tests.test_case import to_numpy

V = 20


@pytest.fixture(scope="module")
def model():
    return build_captioner(V, image_size=32, embedding_dim=8, units=16)


def images():
    return np.random.default_rng(0).random((3, 32, 32, 3)).astype("float32")


def test_greedy_decoding_follows_the_teacher_forced_model(model):
    adapter = CaptionDecoder(model)
    assert adapter.grid == (8, 8)  # the small CNN stops at 8 x 8
    out = to_numpy(jit(lambda x: decode_captions(adapter, x, 6))(images()))
    assert out["tokens"].shape == (3, 6)
    assert out["attention"].shape == (3, 6, 64)
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
    maps = to_numpy(attention_maps(out["attention"], adapter.grid))
    assert maps.shape == (3, 6, 8, 8)


def test_beam_one_equals_greedy(model):
    adapter = CaptionDecoder(model)
    greedy = to_numpy(decode_captions(adapter, images(), 5))
    beam = to_numpy(decode_captions(adapter, images(), 5, beam_size=1))
    np.testing.assert_array_equal(beam["tokens"], greedy["tokens"])
    np.testing.assert_allclose(beam["scores"], greedy["scores"], atol=1e-5)
    wide = to_numpy(decode_captions(adapter, images(), 5, beam_size=3))
    assert np.all(wide["scores"] >= greedy["scores"] - 1e-5)
