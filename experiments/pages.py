"""The model-quality pages' tables, made from the experiments' result files.

    python -m experiments.pages [--results DIR] [--pages DIR]

An experiment run with `--out docs/quality/results/RUN` writes
`RUN/NAME.json`: the command, the machine and its rows
(`benchmarks.harness.run`). A page of `docs/quality/` shows it where it
holds a block

    <!-- results: RUN/NAME -->
    <!-- end of results -->

This script fills every such block with the command, the machine and the
tables (`benchmarks.pages.tables`), made from the file and never typed in;
the prose around the blocks is the page's own. A block
`<!-- results: RUN/NAME KEY -->` shows the table of the result's part
`KEY` alone, for a page that puts prose between an experiment's tables
(and gives its command in that prose). A block
`<!-- results: RUN/NAME + RUN2/NAME -->` shows the rows of several runs
of one experiment (one configuration per process) as one table, under
their commands. A block `<!-- zoo cards -->` shows the shipped models'
cards (`zoo_cards`). `tests/experiments/
quality_pages_test.py` checks that the committed pages are what this
script makes from the committed results.
"""

import argparse
import json
import os
import re

from attention_zoo.export.atomic_file import atomic_write
from benchmarks import pages as benchmark_pages
from experiments import zoo_cards

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = os.path.join(ROOT, "docs", "quality")
RESULTS = os.path.join(PAGES, "results")
BLOCK = re.compile(
    r"(<!-- results: (?P<name>[\w./-]+(?: \+ [\w./-]+)*)"
    r"(?: (?P<key>[\w -]+))? -->\n)"
    r"(?P<body>.*?)"
    r"(?P<end><!-- end of results -->)",
    re.DOTALL,
)


def read_result(results, name, page):
    """The document of result `name` (`RUN/NAME`) that `page` shows.

    Raises:
        FileNotFoundError: there is no such result file; the message
            names the page and the file.
    """
    path = os.path.join(results, f"{name}.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{page} shows results {name}, but {path} does not exist: run "
            "the experiment with --out (see its docstring)"
        )
    with open(path) as file:
        return json.load(file)


def block(documents, key=None):
    """What a block shows of result `documents` (of their part `key`):
    the rows of several documents make one table.

    Raises:
        ValueError: several documents whose results are not lists of
            rows.
    """
    if key is not None:
        parts = [document["result"][key] for document in documents]
    else:
        parts = [document["result"] for document in documents]
    if len(parts) == 1:
        result = parts[0]
    elif all(isinstance(part, list) for part in parts):
        result = [row for part in parts for row in part]
    else:
        raise ValueError(
            "results shown together must be lists of rows: "
            + ", ".join(document["command"] for document in documents)
        )
    if key is not None:
        return f"{benchmark_pages.tables(result)}\n\n"
    machines = []
    for document in documents:
        line = benchmark_pages.machine_line(document)
        if line not in machines:
            machines.append(line)
    commands = "\n".join(document["command"] for document in documents)
    return (
        f"Measured {'; '.join(machines)}, with:\n\n"
        f"```bash\n{commands}\n```\n\n"
        f"{benchmark_pages.tables(result)}\n\n"
    )


def filled(text, results, page="the page"):
    """`text` (a page's Markdown) with every results block filled."""

    def fill(match):
        documents = []
        for name in match["name"].split(" + "):
            document = read_result(results, name, page)
            key = match["key"]
            if key is not None and key not in document["result"]:
                raise KeyError(
                    f"{page} shows part {key!r} of results {name}, "
                    f"which has {', '.join(map(repr, document['result']))}"
                )
            documents.append(document)
        return match[1] + "\n" + block(documents, key) + match["end"]

    return BLOCK.sub(fill, text)


def shown(text):
    """The result names (`RUN/NAME`) of the blocks of `text`."""
    return [
        name
        for match in BLOCK.finditer(text)
        for name in match["name"].split(" + ")
    ]


def make_pages(pages=PAGES, results=RESULTS):
    """`{path: Markdown}` of every page of `pages` that shows a result."""
    made = {}
    for file in sorted(os.listdir(pages)):
        path = os.path.join(pages, file)
        if not file.endswith(".md"):
            continue
        with open(path) as handle:
            text = handle.read()
        if shown(text) or zoo_cards.BLOCK.search(text):
            made[path] = zoo_cards.filled(filled(text, results, path))
    return made


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m experiments.pages",
        description=__doc__.split("\n")[0],
    )
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--pages", default=PAGES)
    args = parser.parse_args(argv)
    for path, text in make_pages(args.pages, args.results).items():
        with atomic_write(path) as file:
            file.write(text)
        print(path)


if __name__ == "__main__":
    main()
