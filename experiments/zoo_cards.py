"""The table of the shipped models, made from their model cards.

`python -m release.build_zoo NAME` builds a shipped model with the
command of its card and writes its figures to
`saved_models/NAME/card.json` (the command, the minutes, the machine, the
size and the test split's metrics). A page of `docs/quality/` shows them
all where it holds a block

    <!-- zoo cards -->
    <!-- end of zoo cards -->

which `python -m experiments.pages` fills with one row per card (in the
order of the model names), never typed in: a model built again shows its
new figures on the page once the pages are made again.
"""

import json
import os
import re

from benchmarks import pages as benchmark_pages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAVED_MODELS = os.path.join(ROOT, "saved_models")
CARD_JSON = "card.json"  # what `release.build_zoo` writes
BLOCK = re.compile(
    r"(<!-- zoo cards -->\n)(?P<body>.*?)(?P<end><!-- end of zoo cards -->)",
    re.DOTALL,
)
INTRO = (
    "Made from `saved_models/*/card.json`, which `python -m "
    "release.build_zoo NAME` writes when it builds NAME with the command "
    "of its card (the test figure: the test split, measured once):\n\n"
)


def read_cards(directory=SAVED_MODELS):
    """The `card.json` documents of the models in `directory`, in the
    order of their names."""
    cards = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name, CARD_JSON)
        if os.path.isfile(path):
            with open(path) as file:
                cards.append(json.load(file))
    return cards


def headline_figure(application, metrics):
    """The headline test figure of a card's `metrics`, in one cell."""
    if application == "translation":
        return (
            f"BLEU {metrics['bleu']:.2f} cased, chrF {metrics['chrf']:.2f} "
            f"({metrics['examples']:,} pairs)"
        )
    if application == "entailment":
        return (
            f"accuracy {100 * metrics['accuracy']:.2f}% "
            f"({metrics['examples']:,} pairs)"
        )
    if application == "captioning":
        return (
            f"BLEU-4 {metrics['bleu_4']:.1f}, CIDEr-D {metrics['cider']:.3f} "
            f"({metrics['images']:,} images)"
        )
    raise ValueError(f"no test figure for application {application!r}")


def rows(cards):
    """One table row per card."""
    return [
        {
            "model": f"`{card['name']}`",
            "version": card["version"],
            "parameters": card["parameters"],
            "build min": f"{card['train_minutes']:.1f}",
            "size": f"{card['size_mb']:.1f} MB",
            "test figure": headline_figure(
                card["application"], card["metrics"]
            ),
            "built": f"{card['built']}, {card['machine']}",
        }
        for card in cards
    ]


def filled(text, directory=SAVED_MODELS):
    """`text` (a page's Markdown) with every zoo-cards block filled (the
    cards are read only for a page that has one)."""
    if not BLOCK.search(text):
        return text
    table = benchmark_pages.tables(rows(read_cards(directory)))

    def fill(match):
        return f"{match[1]}\n{INTRO}{table}\n\n{match['end']}"

    return BLOCK.sub(fill, text)
