"""Where a captioning dataset's files are: the layouts `--data` accepts.

`find_layout(path, format, images)` turns what `attention-zoo train
captioning --data PATH [--format F] [--images DIR]` names into a
`DataLayout`: the format, the caption file, the image folder and, for
Flickr8k, the official split lists.

- COCO: a captions JSON (`annotations/captions_val2017.json`, whose images
  are in `val2017/` beside `annotations/`), or a folder holding exactly
  one `captions_<split>.json` (in it or in its `annotations/`).
- Flickr8k: the folder holding one of `FLICKR8K_TOKEN_FILES`, or the token
  file itself; the image folder is the first of `FLICKR8K_IMAGE_DIRS`
  there. The official lists `Flickr_8k.{train,dev,test}Images.txt` beside
  the token file are used when all three are present.

`detect_format` tells the two apart: a folder by what it holds, a file by
its name. Nothing here reads a caption or an image; the errors say where
the search looked and which flag to give instead (`FileNotFoundError`
when nothing is found, `ValueError` when several caption files are).
`attention_zoo_apps.captioning.data` re-exports these names.
"""

import dataclasses
import glob
import os

FORMATS = ("auto", "coco", "flickr8k")
# Layout of the Flickr8k distribution (see `data.flickr8k_splits`).
FLICKR8K_TOKENS = os.path.join("text", "Flickr8k.token.txt.gz")
FLICKR8K_SPLITS = {
    "train": os.path.join("text", "Flickr_8k.trainImages.txt"),
    "dev": os.path.join("text", "Flickr_8k.devImages.txt"),
    "test": os.path.join("text", "Flickr_8k.testImages.txt"),
}
FLICKR8K_IMAGES = "images_256px"
# Image folders of the Flickr8k layout, in the order they are looked for.
FLICKR8K_IMAGE_DIRS = (
    FLICKR8K_IMAGES,
    "Flicker8k_Dataset",  # the name in the original distribution
    "Flickr8k_Dataset",
    "Images",
    "images",
)
FLICKR8K_TOKEN_FILES = (
    FLICKR8K_TOKENS,
    os.path.join("text", "Flickr8k.token.txt"),
    os.path.join("Flickr8k_text", "Flickr8k.token.txt"),
    "Flickr8k.token.txt",
    "Flickr8k.token.txt.gz",
)


@dataclasses.dataclass(frozen=True)
class DataLayout:
    """The files of one captioning dataset.

    Attributes:
        format: `"coco"` or `"flickr8k"`.
        captions: str, the COCO captions JSON or the Flickr8k token file.
        image_dir: str, the image folder.
        split_files: dict or None, `{"train", "dev", "test"}` -> the
            official Flickr8k list of each split; None where there are
            none (always for COCO). Defaults to `None`.
    """

    format: str
    captions: str
    image_dir: str
    split_files: dict | None = None


def detect_format(path):
    """`"coco"` or `"flickr8k"` for a dataset file or folder.

    A folder is COCO when it (or its `annotations/`) holds a
    `captions_*.json[.gz]`, else Flickr8k; a file (or a path that does not
    exist yet) is COCO when its name ends in `.json` / `.json.gz`.

    Example:

    >>> detect_format("annotations/captions_val2017.json")
    'coco'
    >>> detect_format("text/Flickr8k.token.txt.gz")
    'flickr8k'
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        return "coco" if _coco_candidates(path) else "flickr8k"
    name = path.lower().removesuffix(".gz")
    return "coco" if name.endswith(".json") else "flickr8k"


def _first_existing(paths):
    return next((path for path in paths if os.path.exists(path)), None)


def _coco_candidates(folder):
    found = []
    for pattern in ("captions_*.json", "captions_*.json.gz"):
        found = sorted(
            glob.glob(os.path.join(folder, "annotations", pattern))
            + glob.glob(os.path.join(folder, pattern))
        )
        if found:
            return found
    return found


def resolve_format(format, path):
    """`"coco"` or `"flickr8k"`: `format` itself, or `detect_format(path)`
    for `"auto"`; a `ValueError` for a format not in `FORMATS`."""
    if format not in FORMATS:
        raise ValueError(
            f"`format` must be one of {FORMATS}. Received: format={format!r}"
        )
    return detect_format(path) if format == "auto" else format


def coco_files(path, images=None):
    """`(captions_json, image_dir)` of a COCO file or folder.

    Args:
        path: str or path-like, a captions JSON or a folder holding one.
        images: str or None, the image folder when it is elsewhere.
            Defaults to `None` (found: `<split>/` or `images/` beside the
            JSON, or beside its `annotations/` folder).

    Raises:
        FileNotFoundError: for a folder without a captions JSON, or when
            no image folder is found.
        ValueError: for a folder with several captions JSONs.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        candidates = _coco_candidates(path)
        if len(candidates) != 1:
            error = ValueError if candidates else FileNotFoundError
            raise error(
                f"{path}: expected one captions_<split>.json (in the folder "
                f"or its annotations/), found {candidates or 'none'}; give "
                "the file itself with --data"
            )
        annotations, root = candidates[0], path
    else:
        annotations = path
        root = os.path.dirname(os.path.abspath(path))
        if os.path.basename(root) == "annotations":
            root = os.path.dirname(root)
    if images:
        return annotations, images
    # captions_val2017.json -> val2017/ (and captions_val2017_x -> val2017/).
    split = os.path.basename(annotations).split(".")[0]
    split = split.removeprefix("captions_")
    image_dir = _first_existing(
        os.path.join(root, name)
        for name in (split, split.split("_")[0], "images")
    )
    if image_dir is None:
        raise FileNotFoundError(
            f"No image folder found for {annotations} (looked for {split}/ "
            f"and images/ in {root}): give --images DIR"
        )
    return annotations, image_dir


def flickr8k_files(path, images=None):
    """`(token_file, image_dir, split_files)` of a Flickr8k folder or
    token file.

    Args:
        path: str or path-like, the Flickr8k folder or its token file.
        images: str or None, the image folder when it is elsewhere.
            Defaults to `None` (the first of `FLICKR8K_IMAGE_DIRS` found).

    Returns:
        A tuple; `split_files` maps train / dev / test to the official
        lists beside the token file, or is None where they are absent.

    Raises:
        FileNotFoundError: when no token file or image folder is found.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        token = _first_existing(
            os.path.join(path, name) for name in FLICKR8K_TOKEN_FILES
        )
        if token is None:
            raise FileNotFoundError(
                f"{path}: no Flickr8k token file (looked for "
                f"{', '.join(FLICKR8K_TOKEN_FILES)})"
            )
        root = path
    else:
        token = path
        root = os.path.dirname(os.path.abspath(path))
        if os.path.basename(root) in ("text", "Flickr8k_text"):
            root = os.path.dirname(root)
    text_dir = os.path.dirname(token)
    split_files = {
        split: os.path.join(text_dir, f"Flickr_8k.{split}Images.txt")
        for split in ("train", "dev", "test")
    }
    if not all(os.path.isfile(p) for p in split_files.values()):
        split_files = None
    image_dir = images or _first_existing(
        os.path.join(root, name) for name in FLICKR8K_IMAGE_DIRS
    )
    if image_dir is None:
        raise FileNotFoundError(
            f"No image folder found in {root} (looked for "
            f"{', '.join(FLICKR8K_IMAGE_DIRS)}): give --images DIR"
        )
    return token, image_dir, split_files


def find_layout(path, format="auto", images=None):
    """The `DataLayout` of a dataset file or folder.

    Args:
        path: str or path-like, what `--data` names.
        format: one of `FORMATS`; `"auto"` uses `detect_format`. Defaults
            to `"auto"`.
        images: str or None, the image folder (`--images`). Defaults to
            `None` (found beside the caption file).

    Returns:
        A `DataLayout`.

    Raises:
        ValueError: for an unknown `format`, and see `coco_files` and
            `flickr8k_files`.
        FileNotFoundError: see `coco_files` and `flickr8k_files`.
    """
    format = resolve_format(format, path)
    if format == "coco":
        return DataLayout("coco", *coco_files(path, images))
    return DataLayout("flickr8k", *flickr8k_files(path, images))
