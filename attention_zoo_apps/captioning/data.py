"""Captioned images: the COCO and Flickr8k caption loaders, splits.

- `load_coco_captions` reads a COCO caption JSON (`captions_val2017.json`);
  `load_flickr8k` reads Flickr8k's `Flickr8k.token.txt` (optionally
  restricted to an official split list); `load_captions` picks one of them
  for a path. Both return a `CaptionedImages`: one entry per image present
  in the image folder, with all its reference captions. Images the
  annotations name but the folder lacks are skipped and counted in
  `CaptionedImages.missing` (a missing folder is an error). Errors name
  the file and the line (`path:line: ...`) or the JSON entry (`path:
  images[3]: ...`); `.gz` files are decompressed. Every image name goes
  through `safe_image_path`, so an annotation file cannot point outside
  its image folder: a `../` or absolute name is an error, not a skip.
  Duplicate ids (a COCO image id, a Flickr8k `image#n` key) are errors
  too.
- `split_images` makes a seeded train / validation / test split by image
  (all captions of an image on one side); `flickr8k_splits` returns the
  official Flickr8k train / dev / test lists.

Also here, from the modules beside this one: the image files
(`images.py`: `safe_image_path`, `decode_image_bytes`, `read_image`,
`load_images`, `check_images`) and the layout discovery (`layout.py`:
`find_layout`, `DataLayout`, `detect_format`, `FORMATS`).
"""

import dataclasses
import gzip
import json
import os
import zlib

import numpy as np

from attention_zoo_apps.captioning.images import check_images  # noqa: F401
from attention_zoo_apps.captioning.images import decode_image_bytes  # noqa: F401
from attention_zoo_apps.captioning.images import load_images  # noqa: F401
from attention_zoo_apps.captioning.images import read_image  # noqa: F401
from attention_zoo_apps.captioning.images import safe_image_path
from attention_zoo_apps.captioning.layout import FLICKR8K_IMAGES
from attention_zoo_apps.captioning.layout import FLICKR8K_SPLITS
from attention_zoo_apps.captioning.layout import FLICKR8K_TOKENS
from attention_zoo_apps.captioning.layout import FORMATS  # noqa: F401
from attention_zoo_apps.captioning.layout import DataLayout  # noqa: F401
from attention_zoo_apps.captioning.layout import detect_format  # noqa: F401
from attention_zoo_apps.captioning.layout import find_layout  # noqa: F401
from attention_zoo_apps.captioning.layout import resolve_format
from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.common.loaders import line_error


@dataclasses.dataclass(frozen=True)
class CaptionedImages:
    """Images with their reference captions.

    Attributes:
        image_paths: list of str, the full path of each image.
        captions: list (one per image) of non-empty lists of str, its
            reference captions.
        missing: int, images the annotations name that were absent from the
            image folder (skipped). Defaults to `0`.
    """

    image_paths: list
    captions: list
    missing: int = 0

    def __post_init__(self):
        if len(self.image_paths) != len(self.captions):
            raise ValueError(
                "`image_paths` and `captions` must have the same length. "
                f"Received: {len(self.image_paths)} and {len(self.captions)}"
            )
        for path, captions in zip(self.image_paths, self.captions):
            if isinstance(captions, str) or not captions:
                raise ValueError(
                    "Each entry of `captions` must be a non-empty list of "
                    f"str. Received: {captions!r} for {path}"
                )

    def __len__(self):
        return len(self.image_paths)

    def select(self, indices):
        """The images at `indices` (ints, in that order); `missing=0`."""
        indices = [int(i) for i in indices]
        return CaptionedImages(
            image_paths=[self.image_paths[i] for i in indices],
            captions=[list(self.captions[i]) for i in indices],
        )

    def pairs(self):
        """`[(image_path, caption)]`, one per caption, in image order."""
        return [
            (path, caption)
            for path, captions in zip(self.image_paths, self.captions)
            for caption in captions
        ]


def _check_max_images(max_images):
    if max_images is not None and (
        isinstance(max_images, bool)
        or not isinstance(max_images, int)
        or max_images < 0
    ):
        raise ValueError(
            "`max_images` must be None or a non-negative integer. "
            f"Received: max_images={max_images!r}"
        )


def _collect(entries, max_images):
    """A `CaptionedImages` of the `(full_path, captions)` entries whose
    file exists, the first `max_images` of them; the absent ones seen
    before stopping are counted in `missing`."""
    _check_max_images(max_images)
    image_paths, captions, missing = [], [], 0
    for full_path, texts in entries:
        if max_images is not None and len(image_paths) >= max_images:
            break
        if not os.path.isfile(full_path):
            missing += 1
            continue
        image_paths.append(full_path)
        captions.append(texts)
    return CaptionedImages(image_paths, captions, missing)


def _read_json(path):
    """The parsed JSON of `path` (`.gz` allowed; UTF-8, a byte-order mark
    allowed), errors naming the file and, where there is one, the line."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise ValueError(f"{path}: cannot read the file: {error}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line_number = raw.count(b"\n", 0, error.start) + 1
        raise line_error(
            path, line_number, f"cannot decode as UTF-8: {error}"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise line_error(
            path,
            error.lineno,
            f"invalid JSON: {error.msg} (column {error.colno})",
        ) from None


def _entry(path, records, key, index, fields):
    """The `fields` of `records[index]`, checked: ids are int or str,
    everything else a non-empty str (stripped)."""
    record = records[index]
    where = f"{path}: {key}[{index}]"
    if not isinstance(record, dict):
        raise ValueError(
            f"{where}: expected a JSON object, found {type(record).__name__}"
        )
    values = []
    for field in fields:
        if field not in record:
            raise ValueError(
                f"{where}: missing key {field!r} (keys: {sorted(record)})"
            )
        value = record[field]
        if field.endswith("id"):
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise ValueError(
                    f"{where}: {field!r} must be an int or a str, found "
                    f"{value!r}"
                )
        elif not isinstance(value, str) or not value.strip():
            raise ValueError(
                f"{where}: {field!r} must be a non-empty string, found "
                f"{value!r}"
            )
        else:
            value = value.strip()
        values.append(value)
    return values


def load_coco_captions(annotations_path, image_dir, max_images=None):
    """Reads a COCO caption file (`captions_train2017.json` and the like).

    Uses `images[].id`, `images[].file_name`, `annotations[].image_id` and
    `annotations[].caption`; other fields are ignored. Images come in the
    order of `images`, each with its captions (stripped) in the order of
    `annotations`. Images without any caption are dropped; images whose
    file is absent from `image_dir` are skipped and counted in `missing`.

    Args:
        annotations_path: str or path-like, a `.json` or `.json.gz` file.
        image_dir: str or path-like, the folder the `file_name`s are in.
        max_images: int or None, stop after this many images present.
            Defaults to `None` (all).

    Returns:
        A `CaptionedImages`.

    Raises:
        ValueError: `path:line: ...` for invalid JSON or bytes that are
            not UTF-8; `path: images[i]: ...` or `path: annotations[j]:
            ...` naming the entry for a missing key, a wrong type, an empty
            caption, a duplicate image id, an `image_id` with no image, or
            an unsafe `file_name` (`../`, absolute, a link out of the
            folder: see `safe_image_path`).
        FileNotFoundError: for a missing annotation file or image folder.

    Example:

    >>> coco = load_coco_captions(  # doctest: +SKIP
    ...     "/work/shared/data/coco-mini/annotations/captions_val2017.json",
    ...     "/work/shared/data/coco-mini/val2017",
    ... )
    >>> len(coco), len(coco.pairs())  # doctest: +SKIP
    (79, 395)
    """
    _check_max_images(max_images)
    path = os.fspath(annotations_path)
    _check_image_dir(image_dir, path)
    document = _read_json(path)
    for key in ("images", "annotations"):
        if not isinstance(document, dict) or key not in document:
            raise ValueError(f"{path}: missing top-level key {key!r}")
        if not isinstance(document[key], list):
            raise ValueError(f"{path}: {key!r} must be a list")
    images = document["images"]
    names = {}  # image id -> file name, in file order
    for index in range(len(images)):
        image_id, name = _entry(
            path, images, "images", index, ("id", "file_name")
        )
        if image_id in names:
            raise ValueError(
                f"{path}: images[{index}]: duplicate id {image_id!r}"
            )
        try:
            names[image_id] = safe_image_path(image_dir, name)
        except ValueError as error:
            raise ValueError(f"{path}: images[{index}]: {error}") from None
    captions = {}  # image id -> list of captions
    annotations = document["annotations"]
    for index in range(len(annotations)):
        image_id, caption = _entry(
            path, annotations, "annotations", index, ("image_id", "caption")
        )
        if image_id not in names:
            raise ValueError(
                f"{path}: annotations[{index}]: image_id {image_id!r} is not "
                "the id of any entry of images"
            )
        captions.setdefault(image_id, []).append(caption)
    entries = [
        (names[image_id], captions[image_id])
        for image_id in names
        if image_id in captions
    ]
    return _collect(entries, max_images)


def _check_image_dir(image_dir, annotations_path):
    """A `FileNotFoundError` naming `image_dir` unless it is a folder
    (else every image would be counted missing, silently)."""
    if not os.path.isdir(image_dir):
        raise FileNotFoundError(
            f"The image folder {os.fspath(image_dir)} of "
            f"{os.fspath(annotations_path)} is not a folder (or is missing)."
        )


def _read_flickr8k_tokens(token_path, image_dir):
    """`{name: (full_path, captions)}` in first-seen order from the lines
    `name#n<TAB>caption` of a Flickr8k token file."""
    _check_image_dir(image_dir, token_path)
    images = {}
    seen = {}  # key `name#n` -> its first line
    for line_number, text in iter_lines(token_path):
        key, tab, caption = text.partition("\t")
        if not tab:
            raise line_error(
                token_path,
                line_number,
                f"expected `<image>#<n><TAB><caption>`, found no tab: "
                f"{text[:80]!r}",
            )
        name, hash_sign, number = key.strip().rpartition("#")
        if not hash_sign or not name or not number.isdigit():
            raise line_error(
                token_path,
                line_number,
                f"expected the key `<image>#<n>` (n a caption number), "
                f"found {key!r}",
            )
        if not caption.strip():
            raise line_error(token_path, line_number, "empty caption")
        key = f"{name}#{number}"
        if key in seen:
            raise line_error(
                token_path,
                line_number,
                f"duplicate key {key!r} (first on line {seen[key]})",
            )
        seen[key] = line_number
        if name not in images:
            full_path = safe_image_path(
                image_dir, name, token_path, line_number
            )
            images[name] = (full_path, [])
        images[name][1].append(caption.strip())
    return images


def _read_names(split_path):
    """The set of image names listed in a split file, one a line."""
    return {text.strip() for _, text in iter_lines(split_path)}


def load_flickr8k(token_path, image_dir, split_path=None, max_images=None):
    """Reads Flickr8k's caption file (`Flickr8k.token.txt`).

    Each line is `<image>#<n><TAB><caption>` (`n` the caption number, 0-4);
    captions are stripped and grouped by image, images kept in the order
    they first appear. The distribution's quirk key
    `2258277193_586949ec62.jpg.1` is an image name like any other: no such
    file exists, so it is counted in `missing` (its captions are not
    merged into `2258277193_586949ec62.jpg`).

    Args:
        token_path: str or path-like (`.gz` allowed).
        image_dir: str or path-like, the image folder.
        split_path: str or path-like or None, a file listing image names
            one a line (`Flickr_8k.trainImages.txt`): keep only those
            images, in the token file's order. Defaults to `None` (all).
        max_images: int or None, stop after this many images present.
            Defaults to `None` (all).

    Returns:
        A `CaptionedImages`; `missing` counts the images (of the split,
        when given) that `image_dir` lacks.

    Raises:
        ValueError: `path:line: ...` for a line without a tab, a key
            without `#<n>`, a key seen before (`a.jpg#0` twice), an empty
            caption, an unsafe image name (`../`, absolute, a link out of
            the folder: see `safe_image_path`) or an undecodable line.
        FileNotFoundError: for a missing token file or image folder.

    Example:

    >>> dev = load_flickr8k(  # doctest: +SKIP
    ...     "/work/shared/data/flickr8k/text/Flickr8k.token.txt.gz",
    ...     "/work/shared/data/flickr8k/images_256px",
    ...     "/work/shared/data/flickr8k/text/Flickr_8k.devImages.txt",
    ... )
    >>> len(dev), dev.missing  # doctest: +SKIP
    (113, 887)
    """
    _check_max_images(max_images)
    images = _read_flickr8k_tokens(os.fspath(token_path), image_dir)
    return _flickr8k_subset(images, split_path, max_images)


def _flickr8k_subset(images, split_path, max_images=None):
    keep = None if split_path is None else _read_names(split_path)
    entries = [
        entry for name, entry in images.items() if keep is None or name in keep
    ]
    return _collect(entries, max_images)


def load_captions(
    path, image_dir, format="auto", split_path=None, max_images=None
):
    """Loads captioned images in either supported format.

    Args:
        path: str or path-like: a COCO caption JSON or a Flickr8k token
            file.
        image_dir: str or path-like, the image folder.
        format: one of `FORMATS`; `"auto"` uses `detect_format`. Defaults
            to `"auto"`.
        split_path: str or path-like or None, a list of image names (the
            Flickr8k format only). Defaults to `None`.
        max_images: int or None, stop after this many images present.
            Defaults to `None`.

    Returns:
        A `CaptionedImages`.

    Raises:
        ValueError: for an unknown `format`, a `split_path` with the COCO
            format, and the loaders' errors.
    """
    if resolve_format(format, path) == "coco":
        if split_path is not None:
            raise ValueError(
                "`split_path` applies to the flickr8k format only; a COCO "
                "file is one split already. Received: "
                f"split_path={os.fspath(split_path)!r}"
            )
        return load_coco_captions(path, image_dir, max_images)
    return load_flickr8k(path, image_dir, split_path, max_images)


def split_images(images, validation_fraction, test_fraction, seed=0):
    """Shuffles and splits captioned images into train, validation, test.

    Splits by image, so all captions of an image land on one side.
    Deterministic: a NumPy generator seeded with `seed` permutes the images,
    the first `round(n * test_fraction)` go to test, the next
    `round(n * validation_fraction)` to validation, the rest to train.
    Within each side the original order is kept; `missing` is `0`.

    Args:
        images: a `CaptionedImages`.
        validation_fraction: float in [0, 1).
        test_fraction: float in [0, 1).
        seed: int. Defaults to `0`.

    Returns:
        A tuple `(train, validation, test)` of `CaptionedImages`.
    """
    for name, value in (
        ("validation_fraction", validation_fraction),
        ("test_fraction", test_fraction),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0.0 <= value < 1.0
        ):
            raise ValueError(
                f"`{name}` must be in [0, 1). Received: {name}={value!r}"
            )
    if validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            "`validation_fraction + test_fraction` must be below 1. "
            f"Received: validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}"
        )
    order = np.random.default_rng(seed).permutation(len(images))
    num_test = int(round(len(images) * test_fraction))
    num_validation = int(round(len(images) * validation_fraction))
    test = np.sort(order[:num_test])
    validation = np.sort(order[num_test : num_test + num_validation])
    train = np.sort(order[num_test + num_validation :])
    return images.select(train), images.select(validation), images.select(test)


def flickr8k_splits(root, image_dir=None):
    """The official Flickr8k train / dev / test images with their captions.

    Reads `root/text/Flickr8k.token.txt.gz` once and the lists
    `root/text/Flickr_8k.{train,dev,test}Images.txt`. Images of a list that
    `image_dir` lacks are counted in that split's `missing`.

    Args:
        root: str or path-like, the Flickr8k folder.
        image_dir: str or path-like or None. Defaults to
            `root/images_256px`.

    Returns:
        A tuple `(train, dev, test)` of `CaptionedImages`.

    Example:

    >>> train, dev, test = flickr8k_splits(  # doctest: +SKIP
    ...     "/work/shared/data/flickr8k"
    ... )
    >>> len(train), len(dev), len(test)  # doctest: +SKIP
    (753, 113, 125)
    """
    root = os.fspath(root)
    if image_dir is None:
        image_dir = os.path.join(root, FLICKR8K_IMAGES)
    images = _read_flickr8k_tokens(
        os.path.join(root, FLICKR8K_TOKENS), image_dir
    )
    return tuple(
        _flickr8k_subset(images, os.path.join(root, FLICKR8K_SPLITS[split]))
        for split in ("train", "dev", "test")
    )
