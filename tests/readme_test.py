"""README's Python examples run as written, so they stay true."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_readme_example_runs(index):
    exec(compile(EXAMPLES[index], f"README example {index}", "exec"), {})


def test_readme_opens_with_the_two_commands():
    text = README.read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 2
    assert lines[0].startswith("pip install . ") and "attention-zoo" in lines[0]
    assert lines[1].startswith('pip install ".[test]"')
    ci = (README.parent / ".ci" / "run").read_text()
    assert "README.md" in ci  # CI runs the line it finds there
