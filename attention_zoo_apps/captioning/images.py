"""Image files: safe names from annotation files, decoding, reading.

- `safe_image_path` joins an image folder and a name read from an
  annotation file, refusing names that leave the folder (`../`, absolute,
  a link pointing out).
- `decode_image_bytes` turns encoded JPEG / PNG bytes into a float32
  `(S, S, 3)` tensor in `[0, 1]` with TensorFlow ops only (the same code
  runs inside exported SavedModels); `read_image` does it for a file,
  `load_images` for many files, skipping (never crashing on) unreadable
  ones, and `check_images` only sorts files into readable and not.

`attention_zoo_apps.captioning.data` re-exports these names.
"""

import os

import numpy as np
import tensorflow as tf

from attention_zoo.checks import check_positive_int
from attention_zoo_apps.common.loaders import line_error


def safe_image_path(image_dir, name, path=None, line_number=None):
    """Joins `image_dir` and an image name read from an annotation file.

    The name must stay inside `image_dir`: absolute names, `..` components
    and names whose symbolic links resolve outside the folder are rejected,
    so an annotation file cannot make a loader read arbitrary files.
    Sub-folders (`"train/a.jpg"`) are fine. The file need not exist.

    Args:
        image_dir: str or path-like, the image folder.
        name: str, the image name relative to `image_dir`.
        path: str or path-like or None, the annotation file the name came
            from (for the error message). Defaults to `None`.
        line_number: int or None, its 1-based line. Defaults to `None`.

    Returns:
        The joined path, a str.

    Raises:
        ValueError: naming `name` (and starting with `path:line:` when both
            are given).

    Example:

    >>> safe_image_path("images", "a.jpg")
    'images/a.jpg'
    """
    image_dir = os.fspath(image_dir)
    problem = None
    if not isinstance(name, str) or not name.strip() or "\0" in name:
        problem = "must be a non-empty string without NUL characters"
    elif os.path.isabs(name) or name.startswith(("/", "\\")):
        problem = "is an absolute path"
    elif ".." in name.replace("\\", "/").split("/"):
        problem = "has a '..' component"
    else:
        joined = os.path.join(image_dir, name)
        # A plain file name that is not a link stays inside; resolving
        # every path instead costs a stat per component (seconds on COCO).
        if "/" not in name and not os.path.islink(joined):
            return joined
        root = os.path.realpath(image_dir)
        resolved = os.path.realpath(joined)
        if os.path.commonpath([root, resolved]) != root:
            problem = f"resolves to {resolved}, outside the folder"
        else:
            return joined
    message = (
        f"Image names must stay inside the image folder {image_dir!r}: "
        f"the name {name!r} {problem}."
    )
    if path is not None and line_number is not None:
        raise line_error(path, line_number, message)
    raise ValueError(f"{message} Received: name={name!r}")


def decode_image_bytes(image_bytes, image_size):
    """Decodes one encoded image into a square float32 tensor.

    JPEG, PNG, GIF (first frame), BMP and WebP are accepted
    (`tf.io.decode_image`). Grayscale images are repeated over the three
    channels; the alpha channel of RGBA images is dropped (not composited).
    Pixels are scaled to `[0, 1]` (8- and 16-bit alike), then the image is
    resized to `image_size x image_size` with bilinear interpolation. The
    aspect ratio is **not** kept: the image is squashed or stretched to a
    square, so nothing is cropped away and every part of the scene stays
    visible to the attention. Only TensorFlow ops, so it runs inside a
    `tf.function` or an exported SavedModel.

    Args:
        image_bytes: scalar `tf.string` tensor (or bytes), the encoded file.
        image_size: int, the output side `S`.

    Returns:
        A float32 tensor of shape `(S, S, 3)` with values in `[0, 1]`.

    Raises:
        tf.errors.InvalidArgumentError: for bytes that are not a decodable
            image (when run).
    """
    check_positive_int("image_size", image_size)
    image = tf.io.decode_image(
        image_bytes, channels=3, expand_animations=False, dtype=tf.float32
    )  # (H, W, 3)
    image = tf.image.resize(image, (image_size, image_size), "bilinear")
    return tf.clip_by_value(image, 0.0, 1.0)  # (S, S, 3)


def _reason(error):
    """The message of a TensorFlow error without its op decorations."""
    message = getattr(error, "message", str(error))
    message = message.split("}} ", 1)[-1]  # drops "{{function_node ...}}"
    return message.split(" [Op:", 1)[0].strip()


class _UnreadableImage(ValueError):
    """A file that is not a decodable image; `reason` says why."""

    def __init__(self, path, reason):
        super().__init__(f"Cannot decode image {path}: {reason}")
        self.reason = reason


def _decode_file(path, image_size=None):
    """The decoded image at `path`, resized when `image_size` is given.

    Raises FileNotFoundError or `_UnreadableImage`.
    """
    try:
        image_bytes = tf.io.read_file(path)
    except tf.errors.NotFoundError:
        raise FileNotFoundError(f"No such image file: {path!r}") from None
    except tf.errors.OpError as error:  # a directory, no permission
        raise _UnreadableImage(path, _reason(error)) from None
    try:
        if image_size is None:
            return tf.io.decode_image(
                image_bytes, channels=3, expand_animations=False
            )
        return decode_image_bytes(image_bytes, image_size)
    except tf.errors.OpError as error:
        raise _UnreadableImage(path, _reason(error)) from None


def _failure(error):
    """The reason a file went into `bad`."""
    if isinstance(error, FileNotFoundError):
        return "file not found"
    return error.reason


def read_image(path, image_size):
    """Reads an image file as a square float32 array in `[0, 1]`.

    See `decode_image_bytes` for the formats, channels and the resize
    (bilinear, aspect ratio not kept).

    Args:
        path: str or path-like.
        image_size: int, the output side `S`.

    Returns:
        A NumPy float32 array of shape `(S, S, 3)`.

    Raises:
        FileNotFoundError: when `path` does not exist.
        ValueError: `Cannot decode image <path>: <reason>` for a corrupt,
            truncated or non-image file.
    """
    check_positive_int("image_size", image_size)
    return _decode_file(os.fspath(path), image_size).numpy()


def check_images(paths):
    """Sorts image files into readable and unreadable ones.

    Each file is read and decoded once (`tf.io.decode_image`); nothing is
    raised for a bad file.

    Args:
        paths: iterable of str or path-like.

    Returns:
        A tuple `(good, bad)`: the list of readable paths (str, in order)
        and a dict `{path: reason}` for missing or undecodable ones.
    """
    good, bad = [], {}
    for path in map(os.fspath, paths):
        try:
            _decode_file(path)
        except (FileNotFoundError, _UnreadableImage) as error:
            bad[path] = _failure(error)
        else:
            good.append(path)
    return good, bad


def load_images(paths, image_size, verbose=False):
    """Reads image files into one array, skipping unreadable ones.

    Like `read_image` for each path, but a missing or corrupt file never
    stops the run: it is left out and reported in `bad` (and printed as
    `skipped <path>: <reason>` when `verbose`).

    Args:
        paths: iterable of str or path-like.
        image_size: int, the output side `S`.
        verbose: bool, print one line per skipped file. Defaults to
            `False`.

    Returns:
        A tuple `(images, kept, bad)`: a float32 array `(N, S, S, 3)` of
        the readable images, the list of their indices into `paths`, and a
        dict `{path: reason}` of the others.
    """
    check_positive_int("image_size", image_size)
    images, kept, bad = [], [], {}
    for index, path in enumerate(map(os.fspath, paths)):
        try:
            images.append(_decode_file(path, image_size).numpy())
        except (FileNotFoundError, _UnreadableImage) as error:
            bad[path] = _failure(error)
            if verbose:
                print(f"skipped {path}: {bad[path]}")
        else:
            kept.append(index)
    if not images:
        return np.zeros((0, image_size, image_size, 3), "float32"), kept, bad
    return np.stack(images), kept, bad
