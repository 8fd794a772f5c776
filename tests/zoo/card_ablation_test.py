"""`release.card_ablation`: a translator card's ablation table is the
result files' validation rows, and the shipped cards show it."""

import json
import os

import pytest

from release import build_zoo
from release import card_ablation

ROW = {
    "variant": "baseline",
    "adds": "nothing",
    "epochs": 3,
    "train min": 25.14,
    "val BLEU": 51.314,
    "val chrF": 63.436,
}


def test_the_table_is_the_result_files_rows(tmp_path):
    for run, rows in {"a": [ROW], "b": [{**ROW, "variant": "x"}]}.items():
        os.makedirs(tmp_path / run)
        # A row without validation figures (a failed variant) is left out.
        document = {"result": rows + [{"variant": "unscored"}]}
        (tmp_path / run / card_ablation.RESULT_FILE).write_text(
            json.dumps(document)
        )
    lines = card_ablation.ablation_lines(["b", "a"], results=str(tmp_path))
    assert lines[2:] == [
        "| x | nothing | 3 | 25.1 | 51.31 | 63.44 |",
        "| baseline | nothing | 3 | 25.1 | 51.31 | 63.44 |",
    ]
    with pytest.raises(FileNotFoundError, match="'missing'"):
        card_ablation.ablation_lines(["missing"], results=str(tmp_path))


@pytest.mark.parametrize("name", ["translation-spa-eng", "translation-eng-spa"])
def test_the_shipped_translators_cards_show_the_ablation(name):
    runs = build_zoo.RECIPES[name].ablation
    assert runs
    path = os.path.join(build_zoo.ROOT, "saved_models", name, "README.md")
    with open(path, encoding="utf-8") as file:
        card = file.read()
    for line in card_ablation.ablation_lines(runs):
        assert line in card, line
