"""Imports go at the top of a module; start-up speed has one place,
`attention_zoo_apps.cli` (CONTRIBUTING.md, "Levels"). An import inside a
function says why with a `# lazy: REASON` comment on its line or in the
comment lines directly above it (one such comment covers the consecutive
import lines under it), and the commands' own modules import nothing
inside a function: `cli` imports them once their flags are read."""

import ast
import io
import pathlib
import re
import tokenize

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ("attention_zoo_apps", "attention_zoo", "benchmarks", "experiments")
FOLDERS += ("release",)
# A `# lazy:` comment with its reason (after other pragmas too).
LAZY = re.compile(r"(^|\s)# lazy: \S")
# The commands: `cli` imports them after reading their flags.
COMMAND_FILES = ("train.py", "infer.py", "demo.py", "flags.py")
COMMAND_PATHS = (
    "attention_zoo_apps/commands/",
    "attention_zoo_apps/demo/run.py",
    "attention_zoo_apps/demo/flags.py",
    "attention_zoo_apps/figures/",
)


def untagged_imports(source):
    """The line numbers of `source`'s function-level imports that no
    `# lazy: REASON` comment covers."""
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string
    lines = source.splitlines()
    comment_only = {
        number
        for number in comments
        if lines[number - 1].lstrip().startswith("#")
    }
    imports = []
    _function_imports(ast.parse(source), False, imports)
    import_lines = {
        number
        for node in imports
        for number in range(node.lineno, node.end_lineno + 1)
    }
    found = []
    for node in imports:
        own = range(node.lineno, node.end_lineno + 1)
        if any(LAZY.search(comments.get(number, "")) for number in own):
            continue
        number = node.lineno - 1
        while number in comment_only or number in import_lines:
            if number in comment_only and LAZY.search(comments[number]):
                break
            number -= 1
        else:
            found.append(node.lineno)
    return found


def _function_imports(node, in_function, found):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
            found.append(child)
        inner = in_function or isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef)
        )
        _function_imports(child, inner, found)


def _sources():
    paths = [
        path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py")
    ]
    assert len(paths) >= 200  # the folders are where they were
    return sorted(paths)


def _is_command(path):
    relative = path.relative_to(ROOT).as_posix()
    parts = relative.split("/")
    return relative.startswith(COMMAND_PATHS) or (
        parts[0] == "attention_zoo_apps"
        and len(parts) == 3
        and parts[2] in COMMAND_FILES
    )


def test_function_level_imports_say_why_they_are_lazy():
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _sources()
        for number in untagged_imports(path.read_text())
    ]
    assert not found, (
        "import these at the top, or say why not with a `# lazy: REASON` "
        "comment: " + ", ".join(found)
    )


def test_commands_import_at_the_top():
    found = []
    for path in _sources():
        if _is_command(path):
            imports = []
            _function_imports(ast.parse(path.read_text()), False, imports)
            found += [f"{path.relative_to(ROOT)}:{n.lineno}" for n in imports]
    assert not found, ", ".join(found)


def test_the_check_finds_untagged_imports():
    source = """
import os


class Module:
    import json  # not in a function


def tagged():
    import jax  # lazy: on its backend only

    # lazy: an optional extra
    # (named in the error)
    import pyarrow
    from pyarrow import parquet
    import pyarrow.csv

    text = "# lazy: a string, not a comment"
    import csv

    # lazy: a blank line breaks the cover

    import gzip


def untagged():
    def inner():
        import json
    # lazy:
    import math
    # lazy:no space
    import re
"""
    lines = source.splitlines()
    found = [lines[number - 1].strip() for number in untagged_imports(source)]
    assert found == [
        "import csv",
        "import gzip",
        "import json",
        "import math",
        "import re",
    ]
