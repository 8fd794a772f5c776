"""`experiments.pages`: the quality pages' result tables are what the
committed result files make (no table typed in), every result file is on
a page, and a block naming a missing result says which."""

import json
import pathlib

import pytest

from experiments import pages

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "quality" / "results"


def test_the_committed_pages_are_what_the_results_make():
    made = pages.make_pages()
    assert made, "no page of docs/quality shows a result file"
    for path, text in made.items():
        assert pathlib.Path(path).read_text() == text, (
            f"{path} is not what `python -m experiments.pages` makes"
        )


def test_every_result_file_is_on_a_page():
    files = {
        str(path.relative_to(RESULTS).with_suffix(""))
        for path in RESULTS.rglob("*.json")
    }
    on_pages = {
        name
        for path in (ROOT / "docs" / "quality").glob("*.md")
        for name in pages.shown(path.read_text())
    }
    assert on_pages == files


def _document():
    return {
        "command": "python -m experiments.entailment_accuracy --seed 0",
        "backend": "tensorflow",
        "machine": {"date": "2026-11-30", "cpu": "a CPU", "cores": 2},
        "result": [
            {"data": "SICK", "model": "attention", "test acc %": 73.11},
            {"data": "SICK", "model": "baseline", "test acc %": 68.85},
        ],
    }


def test_a_block_is_filled_with_the_command_machine_and_table(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "exp.json").write_text(json.dumps(_document()))
    page = (
        "# A page\n\nProse.\n\n<!-- results: run/exp -->\nold table\n"
        "<!-- end of results -->\n\nMore prose.\n"
    )
    text = pages.filled(page, str(tmp_path))
    assert text.startswith("# A page\n\nProse.\n\n<!-- results: run/exp -->\n")
    assert text.endswith("<!-- end of results -->\n\nMore prose.\n")
    assert "old table" not in text
    assert "Measured 2026-11-30, a CPU (2 cores)" in text
    command = "python -m experiments.entailment_accuracy --seed 0"
    assert f"```bash\n{command}\n```" in text
    lines = text.splitlines()
    assert "| data | model | test acc % |" in lines
    assert "| SICK | attention | 73.11 |" in lines
    assert pages.filled(text, str(tmp_path)) == text  # filling again: same


def test_a_missing_result_names_the_page_and_the_file(tmp_path):
    page = "<!-- results: run/missing -->\n<!-- end of results -->\n"
    with pytest.raises(FileNotFoundError, match="quality.md shows results"):
        pages.filled(page, str(tmp_path), "quality.md")


def test_a_keyed_block_shows_that_part_alone(tmp_path):
    document = _document()
    document["result"] = {"auroc": document["result"], "other": [{"a": 1}]}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "exp.json").write_text(json.dumps(document))
    page = "<!-- results: run/exp auroc -->\n<!-- end of results -->\n"
    text = pages.filled(page, str(tmp_path))
    assert "| SICK | attention | 73.11 |" in text.splitlines()
    assert "Measured" not in text and "| a |" not in text
    missing = "<!-- results: run/exp speed -->\n<!-- end of results -->\n"
    with pytest.raises(KeyError, match="part 'speed' of results run/exp"):
        pages.filled(missing, str(tmp_path), "ehr.md")


def test_a_block_of_several_runs_shows_one_table_under_their_commands(
    tmp_path,
):
    first, second = _document(), _document()
    second["command"] = "python -m experiments.entailment_accuracy --seed 1"
    second["result"] = [{"data": "SNLI", "model": "baseline", "x": 1}]
    for run, document in (("a", first), ("b", second)):
        (tmp_path / run).mkdir()
        (tmp_path / run / "exp.json").write_text(json.dumps(document))
    page = "<!-- results: a/exp + b/exp -->\n<!-- end of results -->\n"
    text = pages.filled(page, str(tmp_path))
    commands = f"{first['command']}\n{second['command']}"
    assert f"```bash\n{commands}\n```" in text
    assert text.count("Measured 2026-11-30, a CPU (2 cores)") == 1
    lines = text.splitlines()
    assert "| data | model | test acc % | x |" in lines
    assert "| SICK | attention | 73.11 |  |" in lines
    assert "| SNLI | baseline |  | 1 |" in lines
    assert pages.shown(text) == ["a/exp", "b/exp"]
    second["result"] = {"auroc": second["result"]}
    (tmp_path / "b" / "exp.json").write_text(json.dumps(second))
    with pytest.raises(ValueError, match="must be lists of rows"):
        pages.filled(page, str(tmp_path))
