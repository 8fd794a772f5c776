"""`attention_zoo_apps.common.zoo`: shipped models are folders with a card and
numbered versions, found by name first in `$ATTENTION_ZOO_MODELS`."""

import json
import os
import pathlib

import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.common import zoo
from tests.support.tiny_bundles import save_stand_in


def _headline(model):
    return registry.get(model.application).headline(model.metrics)


def _ship(root, name, application, metrics=None, card=True):
    folder = root / name
    save_stand_in(application, str(folder / "1"))
    if metrics is not None:
        path = folder / "1" / "metadata.json"
        metadata = json.loads(path.read_text())
        metadata["metrics"] = metrics
        path.write_text(json.dumps(metadata))
    if card:
        (folder / "README.md").write_text(f"# {name}\n")
    return folder


def test_shipped_models_are_found_by_name_first_in_the_environment(
    tmp_path, monkeypatch
):
    _ship(tmp_path, "my-translator", "translation", {"bleu": 41.234})
    _ship(tmp_path, "no-card", "entailment", card=False)  # a user export
    (tmp_path / "not-a-model").mkdir()
    monkeypatch.setenv(zoo.MODELS_ENV, str(tmp_path))
    assert zoo.models_directories()[0] == str(tmp_path)
    found = zoo.find("my-translator")
    assert found.application == "translation"
    assert found.version == str(tmp_path / "my-translator" / "1")
    assert _headline(found) == "BLEU 41.2"
    assert zoo.find("no-card") is None and zoo.find("not-a-model") is None
    assert zoo.resolve("my-translator") == str(tmp_path / "my-translator")


def test_a_path_is_taken_as_it_is_and_an_unknown_name_lists_the_models(
    tmp_path, monkeypatch
):
    _ship(tmp_path, "my-translator", "translation")
    monkeypatch.setenv(zoo.MODELS_ENV, str(tmp_path))
    folder = str(tmp_path / "my-translator" / "1")
    assert zoo.resolve(folder) == folder
    with pytest.raises(FileNotFoundError, match="my-translator") as error:
        zoo.resolve("no-such-model")
    assert "attention-zoo models" in str(error.value)
    # A model without the metric its application reports has no headline.
    assert _headline(zoo.find("my-translator")) == ""


def test_the_checkouts_saved_models_folder_is_searched(monkeypatch):
    monkeypatch.delenv(zoo.MODELS_ENV, raising=False)
    checkout = str(pathlib.Path(__file__).resolve().parents[3])
    assert os.path.join(checkout, "saved_models") in zoo.models_directories()


def test_an_installed_package_searches_the_checkout_it_was_built_from(
    tmp_path, monkeypatch
):
    checkout = tmp_path / "checkout"
    _ship(checkout / "saved_models", "my-translator", "translation")
    record = tmp_path / "built_from.txt"
    record.write_text(f"{checkout}\n")  # as setup.py writes it
    monkeypatch.delenv(zoo.MODELS_ENV, raising=False)
    monkeypatch.setattr(zoo, "BUILT_FROM", str(record))
    assert zoo.models_directories()[-1] == str(checkout / "saved_models")
    assert zoo.find("my-translator").application == "translation"


def test_with_no_models_anywhere_the_error_says_how_to_get_them(monkeypatch):
    monkeypatch.setattr(zoo, "models_directories", lambda: [])
    with pytest.raises(FileNotFoundError) as error:
        zoo.resolve("translation-spa-eng")
    message = str(error.value)
    assert "no shipped model found" in message
    assert "pip install ./saved_models" in message and zoo.MODELS_ENV in message
