"""The train / validation / test images a captioning run trains on.

A `Split` holds decoded images with their reference captions.
`synthetic_splits` generates the three from the coloured shapes
(`scored_split`: generated images with both captions as references);
`load_splits` reads a dataset's captions (a `data.DataLayout`) into three
`CaptionedImages`, and `read_split` decodes one of them into a `Split`,
leaving out the files that do not decode. Nothing here prints: the
callers (`train.py`, the experiments) report what was skipped.
"""

import dataclasses

import numpy as np

from attention_zoo_apps.captioning import data
from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes
from attention_zoo_apps.captioning.synthetic import mirrored_caption


@dataclasses.dataclass
class Split:
    """Images `(N, S, S, 3)` with their captions (a list of str each), the
    files they came from (real data) or their objects (generated shapes)."""

    images: np.ndarray
    captions: list
    paths: list | None = None
    objects: list | None = None

    def __len__(self):
        return len(self.images)


def synthetic_splits(
    count, image_size, validation_fraction, test_fraction, seed=0
):
    """`(train, validation, test)` `Split`s of generated shapes.

    The last `round(count * validation_fraction)` of `count` images
    (seed `seed`) validate, the rest train; the test images come from
    seed `seed + 1`, `max(1, round(count * test_fraction))` of them, each
    with its caption and the mirrored one as references (either object
    may come first, so both are right) and its objects.

    Args:
        count: int, the training and validation images.
        image_size: int, the side in pixels.
        validation_fraction: float, the share of `count` that validates.
        test_fraction: float, the test images as a share of `count`.
        seed: int. Defaults to `0`.

    Returns:
        A tuple of three `Split`s.
    """
    shapes = make_synthetic_shapes(count, image_size, seed=seed)
    num_validation = int(round(count * validation_fraction))
    test = make_synthetic_shapes(
        max(1, int(round(count * test_fraction))), image_size, seed=seed + 1
    )
    cut = count - num_validation
    return (
        Split(shapes.images[:cut], [[c] for c in shapes.captions[:cut]]),
        Split(shapes.images[cut:], [[c] for c in shapes.captions[cut:]]),
        scored_split(test),
    )


def scored_split(shapes):
    """The `Split` that scores captions of the generated `shapes`: each
    image with its caption and the mirrored one as references (either
    object may come first, so both are right) and its objects (for
    `attention_localisation`)."""
    return Split(
        shapes.images,
        [[c, mirrored_caption(c)] for c in shapes.captions],
        objects=shapes.objects,
    )


def load_splits(
    layout,
    max_images=None,
    validation_fraction=0.1,
    test_fraction=0.1,
    seed=0,
):
    """The captioned images of a dataset, split three ways.

    With the official Flickr8k lists (`layout.split_files`), those; at
    most `max_images` training images and `max(1, max_images // 8)` each
    for dev and test. Otherwise all the images (at most `max_images`),
    split by `data.split_images`.

    Args:
        layout: a `data.DataLayout`.
        max_images: int or None. Defaults to `None` (all).
        validation_fraction: float, for `data.split_images`. Defaults to
            `0.1`.
        test_fraction: float, for `data.split_images`. Defaults to `0.1`.
        seed: int, for `data.split_images`. Defaults to `0`.

    Returns:
        A tuple `((train, validation, test), missing)`: three
        `CaptionedImages` and how many images the annotations name but
        `layout.image_dir` lacks (skipped).

    Raises:
        ValueError, FileNotFoundError: the loaders' errors.
    """
    if layout.split_files is not None:
        caps = {"train": max_images}
        caps["dev"] = caps["test"] = (
            None if max_images is None else max(1, max_images // 8)
        )
        splits = tuple(
            data.load_flickr8k(
                layout.captions,
                layout.image_dir,
                layout.split_files[split],
                caps[split],
            )
            for split in ("train", "dev", "test")
        )
        return splits, sum(split.missing for split in splits)
    if layout.format == "coco":
        images = data.load_coco_captions(
            layout.captions, layout.image_dir, max_images
        )
    else:
        images = data.load_flickr8k(
            layout.captions, layout.image_dir, None, max_images
        )
    splits = data.split_images(
        images, validation_fraction, test_fraction, seed=seed
    )
    return splits, images.missing


def read_split(captioned, image_size):
    """The images of a `CaptionedImages` that decode, as a `Split`.

    Args:
        captioned: a `CaptionedImages`.
        image_size: int, the side `S` the images are resized to.

    Returns:
        A tuple `(split, bad)`: the `Split` (with `paths`) and a dict
        `{path: reason}` of the files left out.
    """
    images, kept, bad = data.load_images(captioned.image_paths, image_size)
    split = Split(
        images,
        [captioned.captions[i] for i in kept],
        paths=[captioned.image_paths[i] for i in kept],
    )
    return split, bad
