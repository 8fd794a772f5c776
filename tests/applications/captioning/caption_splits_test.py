"""Train / validation / test splits: generated, read from a layout,
decoded."""

import json

import numpy as np
import tensorflow as tf

from attention_zoo_apps.captioning import data
from attention_zoo_apps.captioning import splits
from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes
from attention_zoo_apps.captioning.synthetic import mirrored_caption


def test_synthetic_splits_hold_out_validation_and_a_test_seed():
    train, validation, test = splits.synthetic_splits(40, 16, 0.2, 0.1, 3)
    assert (len(train), len(validation), len(test)) == (32, 8, 4)
    shapes = make_synthetic_shapes(40, 16, seed=3)
    np.testing.assert_array_equal(train.images, shapes.images[:32])
    assert validation.captions == [[c] for c in shapes.captions[32:]]
    other = make_synthetic_shapes(4, 16, seed=4)
    np.testing.assert_array_equal(test.images, other.images)
    assert test.captions == [[c, mirrored_caption(c)] for c in other.captions]
    assert test.objects == other.objects and train.objects is None
    assert len(splits.synthetic_splits(5, 16, 0.0, 0.0)[2]) == 1


def _flickr8k(root, names, lists):
    """A Flickr8k folder: two captions per name, the images present
    except `absent*`, and the official lists `{split: names}`."""
    text = root / "text"
    text.mkdir(parents=True)
    (root / "images").mkdir()
    lines = []
    for name in names:
        lines += [f"{name}#0\ta {name}", f"{name}#1\tone {name}"]
        if not name.startswith("absent"):
            (root / "images" / name).write_bytes(b"")
    (text / "Flickr8k.token.txt").write_text("\n".join(lines) + "\n")
    for split, listed in lists.items():
        path = text / f"Flickr_8k.{split}Images.txt"
        path.write_text("".join(f"{name}\n" for name in listed))
    return data.find_layout(str(root))


def test_load_splits_uses_the_official_lists_and_caps_them(tmp_path):
    names = [f"{i}.jpg" for i in range(20)] + ["absent.jpg"]
    lists = {
        "train": names[:16],
        "dev": names[16:18] + ["absent.jpg"],
        "test": names[18:20],
    }
    layout = _flickr8k(tmp_path, names, lists)
    (train, dev, test), missing = splits.load_splits(layout)
    assert [len(train), len(dev), len(test)] == [16, 2, 2]
    assert missing == 1 and dev.missing == 1
    assert train.captions[0] == ["a 0.jpg", "one 0.jpg"]
    # At most N training images and N / 8 (at least 1) for dev and test.
    (train, dev, test), _ = splits.load_splits(layout, max_images=9)
    assert [len(train), len(dev), len(test)] == [9, 1, 1]


def test_load_splits_splits_a_coco_file_by_image(tmp_path):
    (tmp_path / "val").mkdir()
    images, annotations = [], []
    for index in range(11):
        name = f"{index}.jpg"
        if index:  # image 0 is named but absent
            (tmp_path / "val" / name).write_bytes(b"")
        images.append({"id": index, "file_name": name})
        annotations.append({"image_id": index, "caption": f"caption {index}"})
    path = tmp_path / "captions_val.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations}))
    layout = data.find_layout(str(path))
    (train, validation, test), missing = splits.load_splits(
        layout, validation_fraction=0.2, test_fraction=0.1, seed=5
    )
    assert missing == 1
    assert [len(train), len(validation), len(test)] == [7, 2, 1]
    everything = data.load_coco_captions(path, tmp_path / "val")
    expected = data.split_images(everything, 0.2, 0.1, seed=5)
    assert (train, validation, test) == expected


def test_read_split_leaves_out_what_does_not_decode(tmp_path):
    red = np.zeros((5, 7, 3), "uint8")
    red[..., 0] = 255
    good = tmp_path / "red.png"
    good.write_bytes(tf.io.encode_png(red).numpy())
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    captioned = data.CaptionedImages(
        [str(broken), str(good)], [["a broken"], ["a red"]]
    )
    split, bad = splits.read_split(captioned, 4)
    assert split.images.shape == (1, 4, 4, 3) and len(split) == 1
    np.testing.assert_allclose(split.images[0, ..., 0], 1.0)
    assert split.captions == [["a red"]] and split.paths == [str(good)]
    assert list(bad) == [str(broken)]
