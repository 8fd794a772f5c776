"""A caption cut at the longest length the model writes is said, never
cut silently: the export's `truncated` is true exactly for the captions
without `[END]`, and `attention-zoo caption` warns on stderr naming the
images (from `tokens` for exports written before `truncated`)."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import cli
from attention_zoo_apps.captioning import infer as caption_infer
from attention_zoo_apps.captioning.shapes import make_synthetic_shapes
from attention_zoo_apps.common.wordpiece import END_ID
from tests.support import png_images
from tests.support import tiny_bundles


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    """The tiny captioner's export: its 9 tokens never reach `[END]`."""
    folder = tmp_path_factory.mktemp("captioning") / "export"
    captioner = tiny_bundles.tiny_bundle("captioning")
    captioner.export(str(folder / "1"), jit_compile=False)
    return folder


@pytest.fixture(scope="module")
def ending_export_dir(tmp_path_factory):
    """The same captioner made to write `[END]` first: nothing is cut."""
    folder = tmp_path_factory.mktemp("ending") / "export"
    captioner = tiny_bundles.tiny_bundle("captioning")
    logits = captioner.model.get_layer("decoder").logits
    kernel, bias = saved = logits.get_weights()
    ending = np.where(np.arange(len(bias)) == END_ID, 50.0, -50.0)
    logits.set_weights([np.zeros_like(kernel), ending.astype(bias.dtype)])
    try:
        captioner.export(str(folder / "1"), jit_compile=False)
    finally:
        logits.set_weights(saved)
    return folder


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    shapes = make_synthetic_shapes(3, image_size=32, seed=4).images
    paths = []
    for i, image in enumerate(shapes):
        path = folder / f"shape-{i}.png"
        path.write_bytes(png_images.png(image))
        paths.append(str(path))
    return paths


def _outputs(export_dir, images):
    model = tf.saved_model.load(str(export_dir / "1"))
    data = [pathlib.Path(path).read_bytes() for path in images]
    return model.signatures["serving_default"](image=tf.constant(data))


@pytest.mark.parametrize("ending", [False, True])
def test_truncated_is_a_caption_without_end(
    export_dir, ending_export_dir, images, ending
):
    outputs = _outputs(ending_export_dir if ending else export_dir, images)
    tokens = outputs["tokens"].numpy()
    truncated = outputs["truncated"].numpy().tolist()
    assert truncated == [b"[END]" not in row for row in tokens]
    assert truncated == [not ending] * len(images)
    # An exported answer without `truncated` reads the same from tokens.
    older = {k: v for k, v in outputs.items() if k != "truncated"}
    assert caption_infer._cut_rows(older) == caption_infer._cut_rows(outputs)


def test_caption_warns_on_stderr_naming_the_cut_images(
    export_dir, ending_export_dir, images, capsys
):
    assert cli.main(["caption", str(export_dir), *images]) == 0
    captured = capsys.readouterr()
    printed = [line.split("\t") for line in captured.out.splitlines()]
    assert [path for path, _ in printed] == images
    (warning,) = captured.err.strip().splitlines()
    named = ", ".join(images)
    assert warning.startswith(f"attention-zoo caption: warning: {named}: ")
    assert "cut at 9 tokens" in warning
    assert cli.main(["caption", str(ending_export_dir), *images]) == 0
    assert capsys.readouterr().err == ""


def test_the_fallback_finds_captions_without_end():
    tokens = tf.constant([["a", "[END]", ""], ["a", "b", "c"]])
    assert caption_infer._cut_rows({"tokens": tokens}) == [1]
