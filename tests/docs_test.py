"""README and the documentation site (`docs/`, `mkdocs.yml`): their Python
examples run as written, so they stay true; the site builds with
warnings as errors (no broken link, no missing reference); README opens
with the two commands CI runs; every shipped model's card is a page."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tests.support import tiny_bundles

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
EXAMPLES = [
    (f"{path.relative_to(ROOT)} example {number}", code)
    for path in [README, *PAGES]
    for number, code in enumerate(
        re.findall(r"```python\n(.*?)```", path.read_text(), re.S)
    )
]


def test_readme_and_the_site_have_examples():
    assert any(name.startswith("README.md") for name, _ in EXAMPLES)
    assert len(EXAMPLES) >= 5


# Guides whose examples train a model for a few seconds: the slow tier
# runs them (the other guides' examples train the same way, in the quick
# suite); the training page's trains under `mirrored`, whose strategy then
# stays in the process (`distribute.make_strategy` keeps one per name).
SLOW_EXAMPLES = (
    "docs/applications/captioning.md",
    "docs/applications/ehr.md",
    "docs/training.md",
)


# Pages whose examples run in a folder of their own, and what it holds:
# the serving page's reads `saved_models/translation/1`, the export that
# its guide's `attention-zoo train translation --export
# saved_models/translation` writes (here the tiny translator's).
EXAMPLE_FOLDERS = {
    "docs/serving.md": {"saved_models/translation/1": "translation"}
}


@pytest.mark.parametrize(
    "name, code",
    [
        pytest.param(
            name,
            code,
            id=name,
            marks=[pytest.mark.slow] if name.startswith(SLOW_EXAMPLES) else [],
        )
        for name, code in EXAMPLES
    ],
)
def test_example_runs(name, code, shared, tmp_path, monkeypatch):
    page = name.split(" example ")[0]
    if page in EXAMPLE_FOLDERS:
        for path, application in EXAMPLE_FOLDERS[page].items():
            export = tiny_bundles.tiny_export(shared, application)
            shutil.copytree(export, tmp_path / path)
        monkeypatch.chdir(tmp_path)
    exec(compile(code, name, "exec"), {})


def test_readme_opens_with_the_two_commands():
    text = README.read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 2
    assert lines[0].startswith("pip install . ") and "attention-zoo" in lines[0]
    assert lines[1].startswith('pip install ".[test]"')
    ci = (README.parent / ".ci" / "run").read_text()
    assert "README.md" in ci  # CI runs the line it finds there


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250


def test_every_model_card_is_a_page_of_the_site():
    cards = sorted(p.parent.name for p in ROOT.glob("saved_models/*/README.md"))
    assert cards
    nav = (ROOT / "mkdocs.yml").read_text()
    for name in cards:
        page = ROOT / "docs" / "zoo" / f"{name}.md"
        assert f'saved_models/{name}/README.md"' in page.read_text()
        assert f"zoo/{name}.md" in nav


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"]
        + ["--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
    reference = (
        tmp_path / "site" / "api" / "layers" / "index.html"
    ).read_text()
    assert "AdditiveAttention" in reference and "units" in reference


def test_the_gallery_shows_every_figure_the_command_makes():
    """`docs/gallery/` is what `attention-zoo figures --out docs/gallery`
    writes: every figure of the command has its section and images."""
    from attention_zoo_apps.figures.flags import FIGURES

    gallery = ROOT / "docs" / "gallery"
    index = (gallery / "index.md").read_text()
    assert len(re.findall(r"^## ", index, re.M)) == len(FIGURES)
    for name in FIGURES:
        assert not name[0].isdigit() or f"## Figure {name}:" in index, name
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", index)
    assert len(images) >= len(FIGURES)
    assert all((gallery / image).is_file() for image in images)
