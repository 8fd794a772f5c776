"""Every `python -m benchmarks.NAME`, `experiments.NAME` and
`release.NAME` line shown in README, the documentation site and the
model cards names a module that exists, and its flags parse with the
module's own parser: `main(argv)` runs up to its `parse_args`, which
stops it (a benchmark of the performance pages takes minutes to hours,
an experiment of the quality pages up to hours; the benchmarks' tests
run them on small sizes). A renamed or removed flag fails here."""

import argparse
import importlib
import re
import shlex

import pytest

from tests import docs_commands_test

MODULE_LINE = re.compile(
    r"^python -m ((?:benchmarks|experiments|release)\.\w+)(.*)$"
)
# `[--flag]`, `[--flag value]`: what the page gives as optional; parsed
# with it.
OPTIONAL = re.compile(r"\[(--[\w-]+(?: [^\]]+)?)\]")
# The pages' placeholders, and a value that stands for each (a shipped
# model's name).
PLACEHOLDERS = {"NAME": "translation-spa-eng"}


def _module_lines():
    """`(where, module, argv)` of each module line of the pages, once."""
    found = {}
    for page, line in docs_commands_test.shell_lines():
        match = MODULE_LINE.match(line)
        if match:
            rest = OPTIONAL.sub(r"\1", match[2])
            argv = [
                PLACEHOLDERS.get(word, word)
                for word in shlex.split(rest, comments=True)
            ]
            found.setdefault((match[1], tuple(argv)), f"{page.name}: {line}")
    return sorted((where, m, list(a)) for (m, a), where in found.items())


LINES = _module_lines()


class _Parsed(Exception):
    """What stops `main` once its flags are parsed."""


def test_the_pages_show_benchmarks_experiments_and_a_release():
    modules = {module.split(".")[0] for _, module, _ in LINES}
    assert modules == {"benchmarks", "experiments", "release"}
    assert len(LINES) >= 40


@pytest.mark.parametrize(
    "where, module, argv", LINES, ids=[where for where, _, _ in LINES]
)
def test_a_documented_module_line_parses(where, module, argv, monkeypatch):
    parse_args = argparse.ArgumentParser.parse_args

    def parse_and_stop(parser, args=None, namespace=None):
        parse_args(parser, args, namespace)  # exits 2 on a bad flag
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
    main = importlib.import_module(module).main
    with pytest.raises(_Parsed):
        main(argv)


def test_a_wrong_flag_fails_the_check(monkeypatch):
    with pytest.raises(SystemExit):
        test_a_documented_module_line_parses(
            "", "experiments.ehr_risk", ["--folds", "5", "--fold"], monkeypatch
        )
