"""Every `attention-zoo` command line shown in README and the
documentation site parses with the parser of the job it names: a
renamed flag, a removed choice or a command that no longer exists fails
here (the values are placeholders: files such as `photo.jpg` are not
read)."""

import pathlib
import re
import shlex

import pytest

from attention_zoo.serving import flags as serving_flags
from attention_zoo_apps import cli
from attention_zoo_apps import models_command
from attention_zoo_apps import registry
from attention_zoo_apps.demo import flags as demo_flags
from attention_zoo_apps.kernel_regression import demo as kernel_regression

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES += sorted(ROOT.glob("saved_models/*/README.md"))
# A fenced block: its language and its text, fences at the start of a line
# (each closing fence ends its own block, never opens the next one).
FENCED_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)
SHELL = ("bash", "shell", "sh", "")
# `VAR=value` before the command, e.g. `KERAS_BACKEND=jax`.
ENVIRONMENT = re.compile(r"^(?:\w+=\S+\s+)*")


def shell_lines():
    """`(page, line)` of every line of `PAGES`' shell blocks, stripped,
    continuation lines joined, a leading `VAR=value ...` dropped."""
    for page in PAGES:
        for lang, block in FENCED_BLOCK.findall(page.read_text()):
            if lang in SHELL:
                for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                    yield page, ENVIRONMENT.sub("", line.strip())


def documented_lines():
    """`(page, line, argv)` of every `attention-zoo` line of `PAGES`, its
    comments dropped."""
    for page, line in shell_lines():
        if line.startswith("attention-zoo ") or line == "attention-zoo":
            words = shlex.split(line, comments=True)
            yield page, " ".join(words), words[1:]


def documented_lines_of(jobs):
    """`(line, argv)` of the documented lines that run one of `jobs`
    (`argv[0]`), once each, sorted."""
    return sorted(
        {
            (line, tuple(argv))
            for _, line, argv in documented_lines()
            if argv and argv[0] in jobs
        }
    )


COMMANDS = sorted(
    {
        (f"{page.relative_to(ROOT)}: {line}", tuple(argv))
        for page, line, argv in documented_lines()
    }
)


def _parser(argv):
    """`(parser, flags)`: the parser of the job `argv` names, and its
    flags."""
    job, rest = (argv[0], argv[1:]) if argv else ("demo", [])
    if job == "train":
        return registry.get(rest[0]).flags().train_parser(), rest[1:]
    if job in cli.COMMANDS:
        name = cli._COMMAND_APPLICATIONS[job]
        return registry.get(name).flags().infer_parser(), rest
    if job == "demo" and rest[:1] == ["kernel-regression"]:
        return kernel_regression.parser(), rest[1:]
    if job == "demo":
        return demo_flags.parser(), rest
    if job == "models":
        return models_command._parser(), rest
    if job == "serve":
        return serving_flags.parser(), serving_flags._bare_booleans(rest)
    if job in ("--help", "--version"):
        return cli._parser(), argv
    raise AssertionError(f"no attention-zoo job {job!r}")


def test_the_pages_show_commands():
    assert len(COMMANDS) >= 30
    jobs = {argv[0] if argv else "demo" for _, argv in COMMANDS}
    assert {"train", "serve", "models", "translate", "caption"} <= jobs


@pytest.mark.parametrize("where, argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_documented_command_parses(where, argv):
    parser, flags = _parser(list(argv))
    if "--help" in flags:
        return  # `--help` ends the parse with the help, as documented
    parser.parse_args(flags)


def test_a_wrong_flag_fails_the_check():
    parser, flags = _parser(["translate", "m", "hola", "--beam", "4"])
    with pytest.raises(SystemExit):
        parser.parse_args(flags)
