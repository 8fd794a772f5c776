"""`experiments.zoo_cards`: the table of the shipped models is made from
their `card.json` files, one row per model, with each application's
headline test figure."""

import json
import pathlib

import pytest

from attention_zoo_apps.common import zoo
from experiments import zoo_cards

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _card(name, application, metrics):
    return {
        "name": name,
        "application": application,
        "version": 3,
        "train_minutes": 12.34,
        "machine": "2 CPU cores (x86_64)",
        "built": "2026-11-30",
        "parameters": 1234567,
        "size_mb": 4.56,
        "metrics": metrics,
    }


def test_each_application_has_its_headline_figure():
    figure = zoo_cards.headline_figure
    translation = {"bleu": 48.123, "chrf": 61.5, "examples": 5967}
    assert (
        figure("translation", translation)
        == "BLEU 48.12 cased, chrF 61.50 (5,967 pairs)"
    )
    entailment = {"accuracy": 0.65261, "examples": 9824}
    assert figure("entailment", entailment) == "accuracy 65.26% (9,824 pairs)"
    captioning = {"bleu_4": 16.52, "cider": 0.42211, "images": 125}
    assert (
        figure("captioning", captioning)
        == "BLEU-4 16.5, CIDEr-D 0.422 (125 images)"
    )
    with pytest.raises(ValueError, match="'ehr'"):
        figure("ehr", {})


def test_a_block_gets_a_row_per_card_in_name_order(tmp_path):
    entailment = {"accuracy": 0.5, "examples": 10}
    captioning = {"bleu_4": 1.0, "cider": 0.1, "images": 3}
    cards = {
        "b-model": _card("b-model", "entailment", entailment),
        "a-model": _card("a-model", "captioning", captioning),
    }
    for name, card in cards.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text(json.dumps(card))
    (tmp_path / "no-card").mkdir()  # not a built model: no row
    page = "Prose.\n\n<!-- zoo cards -->\nold\n<!-- end of zoo cards -->\n"
    text = zoo_cards.filled(page, str(tmp_path))
    assert text.startswith("Prose.\n\n<!-- zoo cards -->\n")
    assert text.endswith("<!-- end of zoo cards -->\n") and "old" not in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `a-model` | 3 | 1,234,567 | 12.3 | 4.6 MB | BLEU-4 1.0, CIDEr-D "
        "0.100 (3 images) | 2026-11-30, 2 CPU cores (x86_64) |",
        "| `b-model` | 3 | 1,234,567 | 12.3 | 4.6 MB | accuracy 50.00% (10 "
        "pairs) | 2026-11-30, 2 CPU cores (x86_64) |",
    ]


def test_the_page_lists_every_shipped_model():
    page = (ROOT / "docs" / "quality" / "fine-tuning.md").read_text()
    (block,) = zoo_cards.BLOCK.findall(page)
    listed = [line.split("`")[1] for line in block[1].splitlines()
              if line.startswith("| `")]  # fmt: skip
    assert listed == [model.name for model in zoo.shipped_models()]
