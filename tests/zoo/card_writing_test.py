"""release.build_zoo.write_card: the committed cards are what it writes
from their `card.json`, and a failed write leaves a card whole."""

import json
import os
import pathlib

import pytest

from attention_zoo.export.atomic_file import WriteError
from release import build_zoo

ROOT = pathlib.Path(build_zoo.ROOT)
NAMES = sorted(build_zoo.RECIPES)


@pytest.mark.parametrize("name", NAMES)
def test_a_card_is_written_from_its_figures(name, tmp_path):
    shipped = ROOT / "saved_models" / name
    figures = json.loads((shipped / build_zoo.CARD_JSON).read_text())
    (tmp_path / name).mkdir()
    build_zoo.write_card(name, tmp_path, figures)
    written = tmp_path / name
    assert json.loads((written / build_zoo.CARD_JSON).read_text()) == figures
    assert (written / "README.md").read_text() == (
        shipped / "README.md"
    ).read_text()


def test_a_failed_write_leaves_the_old_card(tmp_path, monkeypatch):
    name = NAMES[0]
    shipped = ROOT / "saved_models" / name
    figures = json.loads((shipped / build_zoo.CARD_JSON).read_text())
    folder = tmp_path / name
    folder.mkdir()
    (folder / "README.md").write_text("the old card\n")
    replace = os.replace

    def full_disk(source, target):
        if os.path.basename(target) == "README.md":
            raise OSError(28, "No space left on device")
        replace(source, target)

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(WriteError, match="README.md"):
        build_zoo.write_card(name, tmp_path, figures)
    assert (folder / "README.md").read_text() == "the old card\n"
    assert sorted(os.listdir(folder)) == sorted(
        [build_zoo.CARD_JSON, "README.md"]
    )
