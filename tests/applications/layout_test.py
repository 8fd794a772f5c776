"""The shape every application shares (CONTRIBUTING.md, "The shape of the
code"): one file set per folder, small files, and one registry as the only
place outside an application's folder that names it."""

import ast
import pathlib
import re

import pytest

from attention_zoo_apps import registry

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILE_SET = (
    "__init__.py",
    "config.py",
    "data.py",
    "synthetic.py",
    "model.py",
    "export.py",
    "flags.py",
    "train.py",
    "infer.py",
    "demo.py",
)
MAX_LINES = 500


def _sources(*folders):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("name", registry.APPLICATIONS)
def test_every_application_has_the_file_set(name):
    folder = ROOT / "attention_zoo_apps" / name
    missing = [f for f in FILE_SET if not (folder / f).is_file()]
    assert not missing, f"attention_zoo_apps/{name} lacks {missing}"
    application = registry.get(name)
    assert application.package == f"attention_zoo_apps.{name}"
    bundle = application.bundle.partition(":")[0]
    assert (folder / f"{bundle}.py").is_file()


def test_no_source_file_is_over_500_lines():
    long = {
        str(path.relative_to(ROOT)): count
        for path in _sources("attention_zoo_apps", "attention_zoo")
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"split these by concept: {long}"


def test_only_the_registry_names_an_application_outside_its_folder():
    names = "|".join(registry.APPLICATIONS)
    pattern = re.compile(rf"attention_zoo_apps[./]({names})\b")
    found = []
    for path in _sources("attention_zoo_apps", "attention_zoo"):
        relative = path.relative_to(ROOT)
        inside = relative.parts[:2]
        if relative == pathlib.Path("attention_zoo_apps/registry.py"):
            continue
        for match in pattern.finditer(path.read_text()):
            if inside != ("attention_zoo_apps", match.group(1)):
                found.append(f"{relative}: {match.group(0)}")
    assert not found, "\n".join(found)


def test_no_application_defines_a_decode_function():
    for path in _sources("attention_zoo_apps"):
        assert "def decode_function" not in path.read_text(), path


# An application's command-line modules, which may import the levels
# above its library (`attention_zoo_apps.commands`, the demo's helpers).
COMMAND_MODULES = ("train.py", "flags.py", "infer.py", "demo.py")


def _project_imports(path):
    """The project modules `path` imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(
            name
            for name in names
            if name.startswith(("attention_zoo_apps", "attention_zoo"))
        )
    return found


def _levels_broken(folder, allowed, skip=()):
    broken = []
    for path in _sources(folder):
        if path.name in skip:
            continue
        for name in sorted(_project_imports(path)):
            if not name.startswith(allowed):
                broken.append(f"{path.relative_to(ROOT)} imports {name}")
    return broken


def test_each_level_imports_only_the_levels_below_it():
    # The library knows no application; the framework under the
    # applications knows neither them nor the registry, the zoo's
    # listing, the demo or the commands; an application's library knows
    # only itself, the framework and the library.
    broken = _levels_broken("attention_zoo", ("attention_zoo",))
    broken += _levels_broken(
        "attention_zoo_apps/common",
        ("attention_zoo", "attention_zoo_apps.common"),
    )
    for name in registry.APPLICATIONS:
        broken += _levels_broken(
            f"attention_zoo_apps/{name}",
            (
                "attention_zoo",
                "attention_zoo_apps.common",
                f"attention_zoo_apps.{name}",
            ),
            skip=COMMAND_MODULES + ("__init__.py",),
        )
    assert not broken, "\n".join(broken)
