"""Image files: safe names from annotation files, decoding in and out of
a graph, skipping unreadable files."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps.captioning import data
from attention_zoo_apps.captioning.images import check_images
from attention_zoo_apps.captioning.images import decode_image_bytes
from attention_zoo_apps.captioning.images import load_images
from attention_zoo_apps.captioning.images import read_image
from attention_zoo_apps.captioning.images import safe_image_path
from tests.support.caption_files import error_at
from tests.support.caption_files import touch
from tests.support.caption_files import write


def test_data_re_exports_the_image_functions():
    for function in (
        safe_image_path,
        decode_image_bytes,
        read_image,
        check_images,
        load_images,
    ):
        assert getattr(data, function.__name__) is function


# --- safe image names ------------------------------------------------------


def test_safe_image_path_joins_names_inside_the_folder(tmp_path):
    images = tmp_path / "images"
    touch(images, "a.jpg", "sub/b.jpg")
    os.symlink(images / "a.jpg", images / "link.jpg")  # inside: fine
    for name in ("a.jpg", "sub/b.jpg", "link.jpg", "not_there.jpg"):
        assert safe_image_path(images, name) == os.path.join(str(images), name)


@pytest.mark.parametrize(
    "name, problem",
    [
        ("../secret.jpg", "'..' component"),
        ("sub/../../secret.jpg", "'..' component"),
        ("/etc/passwd", "absolute path"),
        ("", "non-empty string"),
        ("out.jpg", "outside the folder"),  # a symlink to ../secret.jpg
        ("outdir/x.jpg", "outside the folder"),  # a symlinked folder
    ],
)
def test_safe_image_path_rejects_names_escaping_the_folder(
    tmp_path, name, problem
):
    images = tmp_path / "images"
    touch(tmp_path, "secret.jpg", "elsewhere/x.jpg")
    images.mkdir()
    os.symlink(tmp_path / "secret.jpg", images / "out.jpg")
    os.symlink(tmp_path / "elsewhere", images / "outdir")
    with pytest.raises(ValueError, match=re.escape(problem)) as error:
        safe_image_path(images, name)
    assert repr(name) in str(error.value)
    with pytest.raises(ValueError, match=error_at("tokens.txt", 7)):
        safe_image_path(images, name, "tokens.txt", 7)


# --- image decoding --------------------------------------------------------


def _colour_image(height, width, colour, channels=3, dtype="uint8"):
    image = np.zeros((height, width, channels), dtype)
    image[...] = np.asarray(colour, dtype)[:channels]
    return image


def _encode(path, image, kind):
    encode = tf.io.encode_png if kind == "png" else tf.io.encode_jpeg
    path.write_bytes(encode(image).numpy())
    return path


@pytest.mark.parametrize(
    "kind, channels, dtype, expected, atol",
    [
        ("png", 3, "uint8", (200, 100, 50), 1e-6),
        ("jpeg", 3, "uint8", (200, 100, 50), 0.03),
        ("png", 1, "uint8", (90, 90, 90), 1e-6),  # grayscale: repeated
        ("jpeg", 1, "uint8", (90, 90, 90), 0.03),
        ("png", 4, "uint8", (10, 250, 30), 1e-6),  # RGBA: alpha dropped
        ("png", 3, "uint16", (65535, 0, 32768), 1e-4),
    ],
)
def test_read_image_gives_rgb_in_unit_range(
    tmp_path, kind, channels, dtype, expected, atol
):
    scale = 65535.0 if dtype == "uint16" else 255.0
    colour = list(expected) + [0]  # alpha 0 must not blank the pixels
    image = _colour_image(13, 21, colour, channels, dtype)
    path = _encode(tmp_path / f"image.{kind}", image, kind)
    result = read_image(path, 8)
    assert result.shape == (8, 8, 3)
    assert result.dtype == np.float32
    assert 0.0 <= result.min() and result.max() <= 1.0
    want = np.broadcast_to(np.asarray(expected) / scale, (8, 8, 3))
    np.testing.assert_allclose(result, want, atol=atol)


def test_read_image_squashes_without_cropping(tmp_path):
    # A 20 x 40 image, red left half, blue right half: squashed to 8 x 8,
    # both halves keep half the width (a crop would lose one, padding would
    # add rows of another colour).
    image = _colour_image(20, 40, (255, 0, 0))
    image[:, 20:] = (0, 0, 255)
    result = read_image(_encode(tmp_path / "wide.png", image, "png"), 8)
    np.testing.assert_allclose(
        result[:, :4], np.broadcast_to([1, 0, 0], (8, 4, 3))
    )
    np.testing.assert_allclose(
        result[:, 4:], np.broadcast_to([0, 0, 1], (8, 4, 3))
    )


def test_decode_image_bytes_runs_in_a_graph(tmp_path):
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (30, 17, 3)).astype("uint8")
    path = _encode(tmp_path / "noise.png", image, "png")
    decode = tf.function(
        lambda b: decode_image_bytes(b, 12),
        input_signature=[tf.TensorSpec((), tf.string)],
    )
    graph_output = decode.get_concrete_function().structured_outputs
    assert graph_output.shape.as_list() == [12, 12, 3]
    assert graph_output.dtype == tf.float32
    from_graph = decode(tf.constant(path.read_bytes())).numpy()
    np.testing.assert_allclose(from_graph, read_image(path, 12), atol=1e-6)
    expected = tf.image.resize(image.astype("float32") / 255.0, (12, 12))
    np.testing.assert_allclose(from_graph, expected.numpy(), atol=1e-5)


def _bad_images(tmp_path):
    image = (
        np.random.default_rng(0).integers(0, 256, (32, 32, 3)).astype("uint8")
    )
    jpeg = tf.io.encode_jpeg(image).numpy()
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(jpeg[: len(jpeg) // 2])
    text = write(tmp_path / "text.jpg", "this is not an image\n")
    return {
        "truncated": str(truncated),
        "text": str(text),
        "missing": str(tmp_path / "missing.jpg"),
    }


def test_read_image_names_a_bad_file(tmp_path):
    bad = _bad_images(tmp_path)
    for key in ("truncated", "text"):
        pattern = "^Cannot decode image " + re.escape(bad[key]) + ": "
        with pytest.raises(ValueError, match=pattern):
            read_image(bad[key], 8)
    with pytest.raises(FileNotFoundError, match=re.escape(bad["missing"])):
        read_image(bad["missing"], 8)
    good = _encode(tmp_path / "good.png", _colour_image(4, 4, (1, 2, 3)), "png")
    with pytest.raises(ValueError, match="image_size=0"):
        read_image(good, 0)


def test_check_and_load_images_skip_bad_files(tmp_path, capsys):
    bad = _bad_images(tmp_path)
    red = _encode(tmp_path / "red.png", _colour_image(9, 5, (255, 0, 0)), "png")
    grey = _encode(
        tmp_path / "grey.jpg", _colour_image(6, 6, (128,), 1), "jpeg"
    )
    paths = [bad["truncated"], str(red), bad["missing"], grey, bad["text"]]
    good, failed = check_images(paths)
    assert good == [str(red), str(grey)]
    assert sorted(failed) == sorted(bad.values())
    assert failed[bad["missing"]] == "file not found"
    assert "JPEG" in failed[bad["truncated"]]
    assert "Unknown image file format" in failed[bad["text"]]

    images, kept, failed_too = load_images(paths, 4, verbose=True)
    assert kept == [1, 3]
    assert failed_too == failed
    assert images.shape == (2, 4, 4, 3) and images.dtype == np.float32
    np.testing.assert_allclose(images[0], np.broadcast_to([1, 0, 0], (4, 4, 3)))
    np.testing.assert_allclose(images[1], 128 / 255, atol=0.03)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"skipped {bad['truncated']}: {failed[bad['truncated']]}",
        f"skipped {bad['missing']}: file not found",
        f"skipped {bad['text']}: {failed[bad['text']]}",
    ]
    none, kept, _ = load_images([bad["text"]], 4)
    assert none.shape == (0, 4, 4, 3) and kept == []
    assert capsys.readouterr().out == ""
