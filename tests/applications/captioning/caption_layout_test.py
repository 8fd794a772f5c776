"""Dataset layouts: which files a COCO or Flickr8k `--data` path names."""

import os

import pytest

from attention_zoo_apps.captioning import data
from attention_zoo_apps.captioning import layout


def _make(root, *paths):
    """Creates the files (and, for names ending in `/`, folders) under
    `root`; returns `root` as a str."""
    for path in paths:
        full = root / path
        if path.endswith("/"):
            full.mkdir(parents=True, exist_ok=True)
        else:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text("", encoding="utf-8")
    return str(root)


def test_detect_format_reads_folders_by_content_and_files_by_name(tmp_path):
    coco = _make(tmp_path / "coco", "annotations/captions_train2014.json")
    flat = _make(tmp_path / "flat", "captions_mini.json.gz")
    flickr = _make(tmp_path / "flickr", "text/Flickr8k.token.txt")
    assert layout.detect_format(coco) == "coco"
    assert layout.detect_format(flat) == "coco"
    assert layout.detect_format(flickr) == "flickr8k"
    assert layout.detect_format(tmp_path / "not_yet.json") == "coco"
    assert layout.detect_format("Flickr8k.token.txt.gz") == "flickr8k"
    assert data.detect_format is layout.detect_format  # one definition


def test_coco_folder_and_file_find_the_split_folder(tmp_path):
    root = _make(tmp_path, "annotations/captions_val2017.json", "val2017/")
    annotations = os.path.join(root, "annotations", "captions_val2017.json")
    expected = layout.DataLayout(
        "coco", annotations, os.path.join(root, "val2017")
    )
    assert layout.find_layout(root) == expected
    assert layout.find_layout(annotations, "coco") == expected
    elsewhere = str(tmp_path / "pictures")
    assert layout.find_layout(root, images=elsewhere).image_dir == elsewhere
    # captions_val2017_x.json -> val2017/ as well.
    other = _make(tmp_path / "x", "captions_val2017_x.json", "val2017/")
    assert layout.coco_files(other)[1] == os.path.join(other, "val2017")


def test_coco_errors_name_the_path_and_the_flag(tmp_path):
    several = _make(
        tmp_path / "several",
        "annotations/captions_a.json",
        "annotations/captions_b.json",
    )
    with pytest.raises(ValueError, match="expected one captions_") as error:
        layout.find_layout(several, "coco")
    assert several in str(error.value) and "--data" in str(error.value)
    empty = _make(tmp_path / "empty", "images/")
    with pytest.raises(FileNotFoundError, match="found none"):
        layout.find_layout(empty, "coco")
    no_images = _make(tmp_path / "no_images", "captions_val2017.json")
    with pytest.raises(FileNotFoundError, match="give --images DIR"):
        layout.find_layout(no_images)
    with pytest.raises(ValueError, match="format='tsv'"):
        layout.find_layout(several, "tsv")


def test_flickr8k_folder_with_and_without_the_official_lists(tmp_path):
    lists = [f"text/Flickr_8k.{s}Images.txt" for s in ("train", "dev", "test")]
    root = _make(
        tmp_path / "full",
        "text/Flickr8k.token.txt.gz",
        *lists,
        "Flicker8k_Dataset/",
    )
    found = layout.find_layout(root)
    assert found.format == "flickr8k"
    assert found.captions == os.path.join(root, layout.FLICKR8K_TOKENS)
    assert found.image_dir == os.path.join(root, "Flicker8k_Dataset")
    assert found.split_files == {
        split: os.path.join(root, path)
        for split, path in zip(("train", "dev", "test"), lists)
    }
    # The token file itself: the same folder above text/.
    assert layout.find_layout(found.captions) == found
    bare = _make(tmp_path / "bare", "Flickr8k.token.txt", "images/")
    assert layout.find_layout(bare) == layout.DataLayout(
        "flickr8k",
        os.path.join(bare, "Flickr8k.token.txt"),
        os.path.join(bare, "images"),
    )


def test_flickr8k_errors_name_the_path_and_the_flag(tmp_path):
    empty = _make(tmp_path / "empty", "images/")
    with pytest.raises(FileNotFoundError, match="no Flickr8k token file"):
        layout.find_layout(empty, "flickr8k")
    no_images = _make(tmp_path / "no_images", "text/Flickr8k.token.txt")
    with pytest.raises(FileNotFoundError, match="give --images DIR") as error:
        layout.find_layout(no_images)
    assert no_images in str(error.value)


def test_real_layouts(shared_data):
    coco = layout.find_layout(str(shared_data / "coco-mini"))
    assert coco.format == "coco" and coco.split_files is None
    assert os.path.basename(coco.captions) == "captions_val2017.json"
    assert os.path.basename(coco.image_dir) == "val2017"
    flickr = layout.find_layout(str(shared_data / "flickr8k"))
    assert flickr.format == "flickr8k"
    assert os.path.basename(flickr.image_dir) == layout.FLICKR8K_IMAGES
    assert sorted(flickr.split_files) == ["dev", "test", "train"]
