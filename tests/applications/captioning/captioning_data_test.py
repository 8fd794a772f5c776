"""Captioning data: caption loaders, safe image names, image decoding,
splits; real COCO-mini and Flickr8k counts."""

import gzip
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from applications.captioning import data


def _write(path, text, compress=False):
    raw = text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def _touch(directory, *names):
    for name in names:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(b"not decoded by the loaders")


def _at(path, line):
    """A regex for the start of an error about `path:line`."""
    return "^" + re.escape(f"{path}:{line}: ")


def _coco(images, annotations):
    return json.dumps(
        {"info": {}, "images": images, "annotations": annotations}
    )


# --- the container ---------------------------------------------------------


def test_captioned_images_select_and_pairs():
    images = data.CaptionedImages(
        ["a.jpg", "b.jpg", "c.jpg"], [["a0", "a1"], ["b0"], ["c0"]], 4
    )
    assert len(images) == 3
    assert images.pairs() == [
        ("a.jpg", "a0"),
        ("a.jpg", "a1"),
        ("b.jpg", "b0"),
        ("c.jpg", "c0"),
    ]
    subset = images.select(np.array([2, 0]))
    assert subset.image_paths == ["c.jpg", "a.jpg"]
    assert subset.captions == [["c0"], ["a0", "a1"]]
    assert subset.missing == 0
    with pytest.raises(ValueError, match="same length"):
        data.CaptionedImages(["a.jpg"], [["a"], ["b"]])
    with pytest.raises(ValueError, match="non-empty list"):
        data.CaptionedImages(["a.jpg"], [[]])


# --- safe image names ------------------------------------------------------


def test_safe_image_path_joins_names_inside_the_folder(tmp_path):
    images = tmp_path / "images"
    _touch(images, "a.jpg", "sub/b.jpg")
    os.symlink(images / "a.jpg", images / "link.jpg")  # inside: fine
    for name in ("a.jpg", "sub/b.jpg", "link.jpg", "not_there.jpg"):
        assert data.safe_image_path(images, name) == os.path.join(
            str(images), name
        )


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
    _touch(tmp_path, "secret.jpg", "elsewhere/x.jpg")
    images.mkdir()
    os.symlink(tmp_path / "secret.jpg", images / "out.jpg")
    os.symlink(tmp_path / "elsewhere", images / "outdir")
    with pytest.raises(ValueError, match=re.escape(problem)) as error:
        data.safe_image_path(images, name)
    assert repr(name) in str(error.value)
    with pytest.raises(ValueError, match=_at("tokens.txt", 7)):
        data.safe_image_path(images, name, "tokens.txt", 7)


# --- COCO ------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_load_coco_captions(tmp_path, compress):
    images = tmp_path / "val"
    _touch(images, "a.jpg", "sub/d.jpg", "e.jpg")
    text = _coco(
        [
            {"id": 1, "file_name": "a.jpg", "width": 640},
            {"id": 2, "file_name": "b.jpg"},  # absent: missing
            {"id": 3, "file_name": "c.jpg"},  # no caption: dropped
            {"id": "d", "file_name": "sub/d.jpg"},
            {"id": 5, "file_name": "e.jpg"},
        ],
        [
            {"id": 10, "image_id": "d", "caption": "D one."},
            {"id": 11, "image_id": 1, "caption": "  A one.\n"},
            {"id": 12, "image_id": 2, "caption": "B one."},
            {"id": 13, "image_id": 1, "caption": "A two."},
            {"id": 14, "image_id": 5, "caption": "E one."},
        ],
    )
    name = "captions.json.gz" if compress else "captions.json"
    path = _write(tmp_path / name, text, compress)
    coco = data.load_coco_captions(path, images)
    assert coco.image_paths == [
        str(images / "a.jpg"),
        str(images / "sub" / "d.jpg"),
        str(images / "e.jpg"),
    ]
    assert coco.captions == [["A one.", "A two."], ["D one."], ["E one."]]
    assert coco.missing == 1
    first = data.load_coco_captions(path, images, max_images=1)
    assert first.image_paths == coco.image_paths[:1]
    assert first.missing == 0  # stopped before reaching b.jpg
    assert data.load_captions(path, images).captions == coco.captions


_IMAGE = {"id": 1, "file_name": "a.jpg"}
_CAPTION = {"image_id": 1, "caption": "A cat."}


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"images": [', r":1: invalid JSON"),
        ("[1, 2]", r": missing top-level key 'images'"),
        (json.dumps({"images": []}), r": missing top-level key 'annotations'"),
        (
            json.dumps({"images": {}, "annotations": []}),
            r": 'images' must be a list",
        ),
        (
            _coco([_IMAGE, {"id": 2}], [_CAPTION]),
            r": images\[1\]: missing key 'file_name'",
        ),
        (_coco([_IMAGE, "b.jpg"], [_CAPTION]), r": images\[1\]: expected"),
        (
            _coco([_IMAGE, {"id": 1, "file_name": "b.jpg"}], [_CAPTION]),
            r": images\[1\]: duplicate id 1",
        ),
        (
            _coco([{"id": 1.5, "file_name": "a.jpg"}], [_CAPTION]),
            r": images\[0\]: 'id' must be an int or a str",
        ),
        (
            _coco([{"id": 1, "file_name": "../a.jpg"}], [_CAPTION]),
            r": images\[0\]: .*'\.\./a\.jpg'",
        ),
        (
            _coco([{"id": 1, "file_name": "/tmp/a.jpg"}], [_CAPTION]),
            r": images\[0\]: .*'/tmp/a\.jpg' is an absolute path",
        ),
        (
            _coco([_IMAGE], [_CAPTION, {"image_id": 1}]),
            r": annotations\[1\]: missing key 'caption'",
        ),
        (
            _coco([_IMAGE], [{"image_id": 1, "caption": " "}]),
            r": annotations\[0\]: 'caption' must be a non-empty string",
        ),
        (
            _coco([_IMAGE], [{"image_id": 1, "caption": 3}]),
            r": annotations\[0\]: 'caption' must be a non-empty string",
        ),
        (
            _coco([_IMAGE], [_CAPTION, {"image_id": 7, "caption": "x"}]),
            r": annotations\[1\]: image_id 7 is not the id",
        ),
    ],
)
def test_load_coco_captions_names_file_and_entry(tmp_path, text, message):
    path = _write(tmp_path / "captions.json", text)
    with pytest.raises(ValueError, match="^" + re.escape(str(path)) + message):
        data.load_coco_captions(path, tmp_path)


def test_load_coco_captions_rejects_a_corrupt_gzip(tmp_path):
    path = _write(tmp_path / "captions.json.gz", "plain text, not gzip")
    with pytest.raises(ValueError, match=re.escape(f"{path}: cannot read")):
        data.load_coco_captions(path, tmp_path)


# --- Flickr8k --------------------------------------------------------------

_TOKENS = (
    "b.jpg#0\tB zero .\r\n"
    "b.jpg#1\t  B one .  \n"
    "\n"
    "a.jpg#0\tA zero .\n"
    "a.jpg.1#0\tQuirk zero .\n"  # a distinct key with no file
    "c.jpg#0\tC zero .\n"
    "a.jpg#1\tA one .\n"  # not next to a.jpg#0: still grouped
    "d.jpg#0\tD zero .\n"
)


@pytest.mark.parametrize("compress", [False, True])
def test_load_flickr8k(tmp_path, compress):
    images = tmp_path / "images"
    _touch(images, "a.jpg", "b.jpg", "d.jpg")  # c.jpg and a.jpg.1 absent
    name = "tokens.txt.gz" if compress else "tokens.txt"
    path = _write(tmp_path / name, _TOKENS, compress)
    flickr = data.load_flickr8k(path, images)
    assert flickr.image_paths == [
        str(images / "b.jpg"),
        str(images / "a.jpg"),
        str(images / "d.jpg"),
    ]
    assert flickr.captions == [
        ["B zero .", "B one ."],
        ["A zero .", "A one ."],
        ["D zero ."],
    ]
    assert flickr.missing == 2
    assert len(flickr.pairs()) == 5
    first_two = data.load_flickr8k(path, images, max_images=2)
    assert first_two.image_paths == flickr.image_paths[:2]
    assert first_two.missing == 0  # stopped before a.jpg.1 and c.jpg
    assert data.load_flickr8k(path, images, max_images=3) == flickr
    assert data.load_captions(path, images).captions == flickr.captions


def test_load_flickr8k_keeps_the_split_in_token_order(tmp_path):
    images = tmp_path / "images"
    _touch(images, "a.jpg", "b.jpg", "d.jpg")
    tokens = _write(tmp_path / "tokens.txt", _TOKENS)
    split = _write(tmp_path / "split.txt", "d.jpg\nc.jpg\n\n a.jpg \r\n")
    subset = data.load_flickr8k(tokens, images, split_path=split)
    assert subset.image_paths == [str(images / "a.jpg"), str(images / "d.jpg")]
    assert subset.captions == [["A zero .", "A one ."], ["D zero ."]]
    assert subset.missing == 1  # c.jpg; b.jpg and a.jpg.1 are not in it
    same = data.load_captions(tokens, images, split_path=split)
    assert same == subset


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("c.jpg#0 no tab here", "no tab"),
        ("c.jpg\tno hash", "key `<image>#<n>`"),
        ("c.jpg#x\tnot a number", "found 'c.jpg#x'"),
        ("#0\tno name", "found '#0'"),
        ("c.jpg#0\t   ", "empty caption"),
        ("../c.jpg#0\tescapes", "'../c.jpg' has a '..' component"),
        ("/etc/c.jpg#0\tabsolute", "'/etc/c.jpg' is an absolute path"),
    ],
)
def test_load_flickr8k_names_file_and_line(tmp_path, bad_line, message):
    path = _write(tmp_path / "tokens.txt", f"a.jpg#0\tA .\n\n{bad_line}\n")
    with pytest.raises(
        ValueError, match=_at(path, 3) + ".*" + re.escape(message)
    ):
        data.load_flickr8k(path, tmp_path)


def test_load_captions_checks_its_arguments(tmp_path):
    assert data.detect_format("x/captions_val2017.json") == "coco"
    assert data.detect_format("x/captions.JSON.gz") == "coco"
    assert data.detect_format("x/Flickr8k.token.txt.gz") == "flickr8k"
    assert data.detect_format(tmp_path / "tokens") == "flickr8k"
    coco = _write(tmp_path / "c.json", _coco([_IMAGE], [_CAPTION]))
    with pytest.raises(ValueError, match="format='tsv'"):
        data.load_captions(coco, tmp_path, format="tsv")
    with pytest.raises(ValueError, match="split_path="):
        data.load_captions(coco, tmp_path, split_path="split.txt")
    with pytest.raises(ValueError, match="max_images=-1"):
        data.load_captions(coco, tmp_path, max_images=-1)
    # An explicit format wins over the name.
    tokens = _write(tmp_path / "tokens.json", "a.jpg#0\tA .\n")
    _touch(tmp_path, "a.jpg")
    flickr = data.load_captions(tokens, tmp_path, format="flickr8k")
    assert flickr.captions == [["A ."]]


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
    result = data.read_image(path, 8)
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
    result = data.read_image(_encode(tmp_path / "wide.png", image, "png"), 8)
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
        lambda b: data.decode_image_bytes(b, 12),
        input_signature=[tf.TensorSpec((), tf.string)],
    )
    graph_output = decode.get_concrete_function().structured_outputs
    assert graph_output.shape.as_list() == [12, 12, 3]
    assert graph_output.dtype == tf.float32
    from_graph = decode(tf.constant(path.read_bytes())).numpy()
    np.testing.assert_allclose(from_graph, data.read_image(path, 12), atol=1e-6)
    expected = tf.image.resize(image.astype("float32") / 255.0, (12, 12))
    np.testing.assert_allclose(from_graph, expected.numpy(), atol=1e-5)


def _bad_images(tmp_path):
    image = (
        np.random.default_rng(0).integers(0, 256, (32, 32, 3)).astype("uint8")
    )
    jpeg = tf.io.encode_jpeg(image).numpy()
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(jpeg[: len(jpeg) // 2])
    text = _write(tmp_path / "text.jpg", "this is not an image\n")
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
            data.read_image(bad[key], 8)
    with pytest.raises(FileNotFoundError, match=re.escape(bad["missing"])):
        data.read_image(bad["missing"], 8)
    good = _encode(tmp_path / "good.png", _colour_image(4, 4, (1, 2, 3)), "png")
    with pytest.raises(ValueError, match="image_size=0"):
        data.read_image(good, 0)


def test_check_and_load_images_skip_bad_files(tmp_path, capsys):
    bad = _bad_images(tmp_path)
    red = _encode(tmp_path / "red.png", _colour_image(9, 5, (255, 0, 0)), "png")
    grey = _encode(
        tmp_path / "grey.jpg", _colour_image(6, 6, (128,), 1), "jpeg"
    )
    paths = [bad["truncated"], str(red), bad["missing"], grey, bad["text"]]
    good, failed = data.check_images(paths)
    assert good == [str(red), str(grey)]
    assert sorted(failed) == sorted(bad.values())
    assert failed[bad["missing"]] == "file not found"
    assert "JPEG" in failed[bad["truncated"]]
    assert "Unknown image file format" in failed[bad["text"]]

    images, kept, failed_too = data.load_images(paths, 4, verbose=True)
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
    none, kept, _ = data.load_images([bad["text"]], 4)
    assert none.shape == (0, 4, 4, 3) and kept == []
    assert capsys.readouterr().out == ""


# --- splits ----------------------------------------------------------------


def test_split_images_partitions_by_image():
    images = data.CaptionedImages(
        [f"{i}.jpg" for i in range(50)],
        [[f"{i} a", f"{i} b"] for i in range(50)],
        missing=3,
    )
    train, validation, test = data.split_images(images, 0.2, 0.1, seed=1)
    assert (len(train), len(validation), len(test)) == (35, 10, 5)
    seen = train.image_paths + validation.image_paths + test.image_paths
    assert sorted(seen) == sorted(images.image_paths)
    for side in (train, validation, test):
        order = [int(p.split(".")[0]) for p in side.image_paths]
        assert order == sorted(order)
        for path, captions in zip(side.image_paths, side.captions):
            assert captions == [f"{path[:-4]} a", f"{path[:-4]} b"]
    again = data.split_images(images, 0.2, 0.1, seed=1)
    assert again == (train, validation, test)
    other = data.split_images(images, 0.2, 0.1, seed=2)
    assert other[2].image_paths != test.image_paths
    with pytest.raises(ValueError, match="test_fraction=1.0"):
        data.split_images(images, 0.2, 1.0)
    with pytest.raises(ValueError, match="below 1"):
        data.split_images(images, 0.5, 0.5)


# --- real data -------------------------------------------------------------


def test_real_coco_mini(shared_data):
    root = shared_data / "coco-mini"
    annotations = root / "annotations"
    coco = data.load_captions(
        annotations / "captions_val2017.json", root / "val2017"
    )
    assert (len(coco), len(coco.pairs()), coco.missing) == (79, 395, 0)
    assert all(len(captions) == 5 for captions in coco.captions)
    # The full 5k caption file names 5,000 images; 79 are in the folder.
    full = data.load_captions(
        annotations / "captions_val2017_full5k.json.gz", root / "val2017"
    )
    assert (len(full), full.missing) == (79, 5000 - 79)
    assert sorted(full.pairs()) == sorted(coco.pairs())
    good, bad = data.check_images(coco.image_paths[:10])
    assert (len(good), bad) == (10, {})


def test_real_flickr8k(shared_data, tmp_path):
    root = shared_data / "flickr8k"
    tokens = root / "text" / "Flickr8k.token.txt.gz"
    # 8,092 keys: 8,091 images and the quirk key ...jpg.1, none of them in
    # an empty folder.
    nothing = data.load_flickr8k(tokens, tmp_path)
    assert (len(nothing), nothing.missing) == (0, 8092)
    first_1k = data.load_flickr8k(tokens, root / "images_256px")
    assert (len(first_1k), len(first_1k.pairs())) == (1000, 5000)
    assert first_1k.missing == 7092
    train, dev, test = data.flickr8k_splits(root)
    assert (len(train), len(dev), len(test)) == (753, 113, 125)
    assert (train.missing, dev.missing, test.missing) == (5247, 887, 875)
    # The 200 originals with the 1k token file: 157 / 23 / 19 in the lists.
    originals = data.flickr8k_splits(root, root / "images_original")
    assert [len(split) for split in originals] == [157, 23, 19]
    small = data.load_captions(
        root / "Flickr8k.token.1k.txt", root / "images_original"
    )
    assert (len(small), small.missing) == (200, 800)
    images, kept, bad = data.load_images(small.image_paths[:3], 32)
    assert images.shape == (3, 32, 32, 3) and kept == [0, 1, 2]
    assert bad == {}
