"""Captioning data: caption loaders, splits; real COCO-mini and Flickr8k
counts. Image files: `caption_images_test.py`; layouts:
`caption_layout_test.py`."""

import json
import re

import numpy as np
import pytest

from attention_zoo_apps.captioning import data
from tests.support.caption_files import error_at
from tests.support.caption_files import touch
from tests.support.caption_files import write


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


# --- COCO ------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_load_coco_captions(tmp_path, compress):
    images = tmp_path / "val"
    touch(images, "a.jpg", "sub/d.jpg", "e.jpg")
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
    path = write(tmp_path / name, text, compress)
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
    path = write(tmp_path / "captions.json", text)
    with pytest.raises(ValueError, match="^" + re.escape(str(path)) + message):
        data.load_coco_captions(path, tmp_path)


def test_load_coco_captions_rejects_a_corrupt_gzip(tmp_path):
    path = write(tmp_path / "captions.json.gz", "plain text, not gzip")
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
    touch(images, "a.jpg", "b.jpg", "d.jpg")  # c.jpg and a.jpg.1 absent
    name = "tokens.txt.gz" if compress else "tokens.txt"
    path = write(tmp_path / name, _TOKENS, compress)
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
    touch(images, "a.jpg", "b.jpg", "d.jpg")
    tokens = write(tmp_path / "tokens.txt", _TOKENS)
    split = write(tmp_path / "split.txt", "d.jpg\nc.jpg\n\n a.jpg \r\n")
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
    path = write(tmp_path / "tokens.txt", f"a.jpg#0\tA .\n\n{bad_line}\n")
    with pytest.raises(
        ValueError, match=error_at(path, 3) + ".*" + re.escape(message)
    ):
        data.load_flickr8k(path, tmp_path)


def test_load_captions_checks_its_arguments(tmp_path):
    assert data.detect_format("x/captions_val2017.json") == "coco"
    assert data.detect_format("x/captions.JSON.gz") == "coco"
    assert data.detect_format("x/Flickr8k.token.txt.gz") == "flickr8k"
    assert data.detect_format(tmp_path / "tokens") == "flickr8k"
    coco = write(tmp_path / "c.json", _coco([_IMAGE], [_CAPTION]))
    with pytest.raises(ValueError, match="format='tsv'"):
        data.load_captions(coco, tmp_path, format="tsv")
    with pytest.raises(ValueError, match="split_path="):
        data.load_captions(coco, tmp_path, split_path="split.txt")
    with pytest.raises(ValueError, match="max_images=-1"):
        data.load_captions(coco, tmp_path, max_images=-1)
    # An explicit format wins over the name.
    tokens = write(tmp_path / "tokens.json", "a.jpg#0\tA .\n")
    touch(tmp_path, "a.jpg")
    flickr = data.load_captions(tokens, tmp_path, format="flickr8k")
    assert flickr.captions == [["A ."]]


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
