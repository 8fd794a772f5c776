"""The zoo: the trained models shipped in `saved_models/`, found by name.

A shipped model is a folder `saved_models/<name>/` holding a model card
(`README.md`) and numbered SavedModel versions, each as `export` writes it
(TF Serving's layout: `tensorflow_model_server --model_base_path=
saved_models/<name>` serves it as is). Each version folder also carries
the bundle's config and vocabularies, and its SavedModel the model's
weights (`attention_zoo.export.read_model_weights`), so a bundle's
`from_preset(name)` can fine-tune it.

    from attention_zoo_apps.common import zoo

    zoo.shipped_models()              # [ShippedModel(name=..., ...), ...]
    zoo.resolve("translation-spa-eng")  # its folder
    zoo.resolve("outputs/my_export")    # a folder is taken as it is

Where the models are looked for, first found first (`models_directories`):

1. `$ATTENTION_ZOO_MODELS`, a folder of model folders;
2. `saved_models/` of the checkout this package runs from (tests, an
   editable install);
3. the `attention-zoo-models` distribution, the package
   `attention_zoo_models` (`pip install ./saved_models` from a checkout);
4. `saved_models/` of the checkout `pip install .` was run from (the wheel
   leaves the 126 MB of models out and records that folder instead, in
   `built_from.txt` beside this module: setup.py).

`HOW_TO_GET` says how to get them where none is found.
"""

import dataclasses
import importlib.util
import os

from attention_zoo.export import read_metadata
from attention_zoo.export import resolve_version

MODELS_ENV = "ATTENTION_ZOO_MODELS"
CARD = "README.md"
FOLDER = "saved_models"
MODELS_PACKAGE = "attention_zoo_models"  # the attention-zoo-models wheel
BUILT_FROM = os.path.join(os.path.dirname(__file__), "built_from.txt")
HOW_TO_GET = (
    "the shipped models are in saved_models/ of a checkout of attention-zoo: "
    "run `pip install .` from the checkout (the package then finds them "
    "there), or `pip install ./saved_models` (the attention-zoo-models "
    f"distribution), or set {MODELS_ENV} to that folder"
)


def models_directories():
    """The folders searched for shipped models, in order (those that
    exist)."""
    candidates = []
    if os.environ.get(MODELS_ENV):
        candidates.append(os.environ[MODELS_ENV])
    here = os.path.abspath(__file__)  # attention_zoo_apps/common/zoo.py
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    candidates.append(os.path.join(checkout, FOLDER))
    spec = importlib.util.find_spec(MODELS_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(spec.submodule_search_locations)
    if os.path.isfile(BUILT_FROM):
        with open(BUILT_FROM, encoding="utf-8") as file:
            candidates.append(os.path.join(file.read().strip(), FOLDER))
    found = []
    for candidate in candidates:
        candidate = os.path.abspath(candidate)
        if os.path.isdir(candidate) and candidate not in found:
            found.append(candidate)
    return found


@dataclasses.dataclass(frozen=True)
class ShippedModel:
    """One shipped model.

    Attributes:
        name: str, its folder's name (`translation-spa-eng`).
        path: str, its folder (of numbered versions).
        version: str, the newest version's folder.
        application: str, the application its `metadata.json` names.
        metrics: dict, the test metrics its `metadata.json` records.
    """

    name: str
    path: str
    version: str
    application: str
    metrics: dict


def exported_application(path):
    """The application `metadata.json` in `path` names; None where the
    file is missing, unreadable or names none."""
    try:
        metadata = read_metadata(path)
    except (OSError, ValueError):  # missing, unreadable, not JSON
        return None
    application = (
        metadata.get("application") if isinstance(metadata, dict) else None
    )
    return application if isinstance(application, str) else None


def _shipped(path):
    """The `ShippedModel` in folder `path`, or None when it is not one (no
    card, no version, no readable metadata naming an application)."""
    if not os.path.isfile(os.path.join(path, CARD)):
        return None
    try:
        version = resolve_version(path)
        metadata = read_metadata(version)
    except (OSError, ValueError):
        return None
    application = metadata.get("application")
    if not isinstance(application, str):
        return None
    return ShippedModel(
        name=os.path.basename(path),
        path=path,
        version=version,
        application=application,
        metrics=dict(metadata.get("metrics") or {}),
    )


def shipped_models():
    """Every shipped model, sorted by name; a name found in two folders
    is the first folder's (`models_directories`)."""
    models = {}
    for directory in models_directories():
        for name in sorted(os.listdir(directory)):
            if name in models:
                continue
            model = _shipped(os.path.join(directory, name))
            if model is not None:
                models[name] = model
    return [models[name] for name in sorted(models)]


def find(name):
    """The shipped model called `name`, or None."""
    for model in shipped_models():
        if model.name == name:
            return model
    return None


def resolve(name_or_directory):
    """The folder of a shipped model's name, or the folder given.

    An existing path is returned as it is (an export folder or a version
    folder); else `name_or_directory` must be a shipped model's name.

    Raises:
        FileNotFoundError: neither an existing path nor a shipped model's
            name; the message lists the shipped names.
    """
    if os.path.exists(name_or_directory):
        return name_or_directory
    model = find(name_or_directory)
    if model is not None:
        return model.path
    names = ", ".join(model.name for model in shipped_models())
    listed = (
        f"shipped models: {names}; `attention-zoo models` lists them"
        if names
        else f"no shipped model found: {HOW_TO_GET}"
    )
    raise FileNotFoundError(
        f"{name_or_directory} is neither a folder nor a shipped model's "
        f"name ({listed})"
    )


def size_mb(path):
    """The bytes of the files under `path`, in MB (10^6 bytes): a model
    card's `size_mb`."""
    total = 0
    for folder, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return total / 1e6
