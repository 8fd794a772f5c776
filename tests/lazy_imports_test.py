"""Imports go at the top of a module; start-up speed has one place,
`applications.cli` (CONTRIBUTING.md, "Levels"). An import inside a
function says why on its line or in the comment right above it
(`# lazy: ...`), and the commands' own modules import nothing inside a
function: `cli` imports them only once their flags are read."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("applications", "attention_zoo", "benchmarks", "experiments")
PACKAGES += ("release",)
TAG = "# lazy:"
# The commands: imported by `cli` after their flags are read.
COMMAND_FILES = ("train.py", "infer.py", "demo.py", "flags.py")
COMMAND_FOLDERS = (
    "applications/commands/",
    "applications/demo/run.py",
    "applications/demo/flags.py",
)


def _function_imports(path):
    """`(line number, import node)` of each import inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found[inner.lineno] = inner
    return sorted(found.items())


def _tagged(lines, number):
    """Whether the import on line `number` (1-based) carries `TAG` on its
    line, on the line it follows (`try:  # lazy: ...`) or in the comment
    block above it, past other imports and blank lines."""
    index = number - 1
    if TAG in lines[index] or (index and TAG in lines[index - 1]):
        return True
    index -= 1
    while index >= 0:
        text = lines[index].strip()
        if text.startswith("#"):
            if TAG in text:
                return True
        elif text and not text.startswith(("import ", "from ")):
            return False
        index -= 1
    return False


def _sources():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _is_command(path):
    relative = path.relative_to(ROOT).as_posix()
    if relative.startswith(COMMAND_FOLDERS):
        return True
    parts = relative.split("/")
    return (
        parts[0] == "applications"
        and len(parts) == 3
        and (parts[2] in COMMAND_FILES)
    )


def test_every_import_inside_a_function_says_why():
    untagged = []
    for path in _sources():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, _ in _function_imports(path):
            if not _tagged(lines, number):
                relative = path.relative_to(ROOT)
                untagged.append(f"{relative}:{number}: {lines[number - 1]}")
    assert not untagged, "\n".join(untagged)


def test_commands_import_at_the_top():
    lazy = []
    for path in _sources():
        if _is_command(path):
            for number, _ in _function_imports(path):
                lazy.append(f"{path.relative_to(ROOT)}:{number}")
    assert not lazy, "\n".join(lazy)


@pytest.mark.parametrize(
    "source, tagged",
    [
        ("def f():\n    import os\n", False),
        ("def f():\n    import os  # lazy: a reason\n", True),
        (
            "def f():\n    # lazy: a reason\n    import os\n    import re\n",
            True,
        ),
        ("def f():\n    # lazy: a reason\n    x = 1\n    import os\n", False),
    ],
)
def test_the_check_finds_an_untagged_import(tmp_path, source, tagged):
    path = tmp_path / "module.py"
    path.write_text(source)
    lines = source.splitlines()
    found = [_tagged(lines, n) for n, _ in _function_imports(path)]
    assert found and all(found) == tagged
