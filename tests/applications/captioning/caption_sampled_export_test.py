"""A captioning export that samples: `serving_default` draws seeds and
returns them, `seeded` takes them, and an image with a seed gets the
caption `caption(..., seed=[...])` gives it in Python, in any batch and
with any `batch_size`, served without Keras or the project."""

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps.captioning.export import CaptioningServingModule
from tests.support import fresh_process
from tests.support import png_images

SAMPLING = {"sampling": "top_k", "top_k": 4, "temperature": 1.5}


@pytest.fixture(scope="module")
def encoded(shapes):
    """PNGs of the held-out images, and the pixels the export decodes
    from them (8-bit, back in [0, 1])."""
    return png_images.pngs_and_pixels(shapes.images[40:46])


@pytest.fixture(scope="module")
def sampled_export(captioner, tmp_path_factory):
    """A folder with version 1 of the captioner's sampling export, written
    once for the tests that serve it (read-only)."""
    export = tmp_path_factory.mktemp("sampled") / "captioning"
    captioner.export(str(export / "1"), **SAMPLING)  # beam 1 when sampling
    return export


def test_captions_draw_alike_with_any_batch_size(captioner, shapes):
    images = shapes.images[40:46]
    whole = captioner.caption(images, seed=9, **SAMPLING)
    assert captioner.caption(images, seed=9, batch_size=4, **SAMPLING) == whole
    seeds = np.arange(9, 15)
    assert captioner.caption(images, seed=seeds, batch_size=4, **SAMPLING) == (
        whole
    )
    assert (
        captioner.caption(images[2:5], seed=seeds[2:5], **SAMPLING)
        == (whole[2:5])
    )
    draws = {
        tuple(captioner.caption(images, seed=s, **SAMPLING)) for s in range(5)
    }
    assert len(draws) > 1


def test_seeded_equals_caption_with_the_same_seeds(captioner, encoded):
    pngs, pixels = encoded
    module = CaptioningServingModule(captioner, beam_size=1, **SAMPLING)
    seeds = np.array([4, 2**32 - 2, 0, 7, 11, 3], "int64")
    served = module.seeded(tf.constant(pngs), tf.constant(seeds))
    expected, maps, _ = captioner.caption(
        pixels, seed=seeds, return_attention=True, **SAMPLING
    )
    assert [c.decode() for c in served["caption"].numpy()] == expected
    for row, heatmaps in enumerate(maps):
        np.testing.assert_allclose(
            served["attention"].numpy()[row, : len(heatmaps)],
            heatmaps,
            atol=1e-4,
        )
    drawn = module.serve(tf.constant(pngs))
    again = module.seeded(tf.constant(pngs), drawn["seed"])
    np.testing.assert_array_equal(
        again["caption"].numpy(), drawn["caption"].numpy()
    )


def test_sampling_export_serves_without_the_project(
    captioner, encoded, sampled_export
):
    pngs, pixels = encoded
    path = str(sampled_export / "1")
    seeds = [8, 6, 7, 5, 3, 0]
    expected = captioner.caption(pixels, seed=seeds, **SAMPLING)
    served = fresh_process.run_without_project(
        f"""
model = tf.saved_model.load({path!r})
images = tf.constant({pngs!r})
drawn = model.signatures["serving_default"](image=images)
seeded = model.signatures["seeded"]
again = seeded(image=images, seed=drawn["seed"])
mine = seeded(image=images, seed=tf.constant({seeds!r}, tf.int64))
strings = lambda t: [s.decode("utf-8") for s in t.numpy()]
emit({{
    "outputs": sorted(drawn),
    "drawn": strings(drawn["caption"]),
    "again": strings(again["caption"]),
    "mine": strings(mine["caption"]),
}})
"""
    )
    assert served["outputs"] == [
        "attention",
        "caption",
        "seed",
        "tokens",
        "truncated",
    ]
    assert served["again"] == served["drawn"]
    assert served["mine"] == expected


def test_caption_command_takes_a_seed(
    captioner, encoded, sampled_export, tmp_path, capsys
):
    from attention_zoo_apps import cli

    pngs, pixels = encoded
    paths = []
    for index, png in enumerate(pngs[:2]):
        paths.append(str(tmp_path / f"image-{index}.png"))
        with open(paths[-1], "wb") as f:
            f.write(png)
    export = sampled_export
    assert cli.main(["caption", str(export), *paths, "--seed", "21"]) == 0
    lines = capsys.readouterr().out.splitlines()[-2:]
    expected = captioner.caption(pixels[:2], seed=21, **SAMPLING)
    assert lines == [f"{p}\t{c}" for p, c in zip(paths, expected)]
