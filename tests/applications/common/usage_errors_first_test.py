"""A bad flag value of `attention-zoo train APP` is a short usage error that
comes before TensorFlow is imported or any data is read: two lines (a
usage hint, then the error naming the flag and the value), exit code 2."""

import json
import pathlib
import subprocess
import sys

import pytest

from attention_zoo_apps import cli

ROOT = pathlib.Path(__file__).resolve().parents[3]
# Runs `cli.main(argv)` for each argv of a JSON list, in one process, then
# prints a JSON list of `[exit code, stdout, stderr]` and which of the
# heavy modules the calls imported.
_MAIN = """
import contextlib, io, json, sys
from attention_zoo_apps import cli
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit:
            code = exit.code
    results.append([code, out.getvalue(), err.getvalue()])
heavy = [m for m in ("tensorflow", "keras", "jax") if m in sys.modules]
print(json.dumps([results, heavy]))
"""
CASES = [
    ("entailment", ["--epochs", "-1"], "--epochs must be a positive "
     "integer, got -1"),
    ("translation", ["--batch-size=0"], "--batch-size must be a "
     "positive integer, got 0"),
    ("ehr", ["--learning-rate", "0"], "--learning-rate must be a "
     "positive number, got 0.0"),
    ("captioning", ["--validation-fraction", "1"], "--validation-"
     "fraction must be at least 0 and below 1, got 1.0"),
    ("entailment", ["--patience", "0"], "--patience must be a positive "
     "integer, got 0"),
    ("translation", ["--epochs", "two"], "argument --epochs: invalid "
     "int value: 'two'"),
    ("ehr", ["--data", "{missing}"], "--data {missing}: no such file or "
     "folder"),
    ("captioning", ["--run-dir", "{file}"], "--run-dir {file}: a file, "
     "not a folder"),
    ("entailment", ["--export", "{file}"], "--export {file}: a file, not "
     "a folder"),
    # Values only one application has, read by its own parser.
    ("translation", ["--units", "0"], "--units must be a positive "
     "integer, got 0"),
    ("entailment", ["--hidden-units", "-3"], "--hidden-units must be a "
     "positive integer, got -3"),
    ("captioning", ["--max-images", "0"], "--max-images must be a "
     "positive integer, got 0"),
    ("ehr", ["--max-events", "0"], "--max-events must be a positive "
     "integer, got 0"),
    ("entailment", ["--validation-fraction", "0", "--patience", "2"],
     "--patience watches the validation loss: it needs a validation split "
     "(--validation-fraction above 0)"),
    ("translation", ["--no-such-flag"], "unrecognized arguments: "
     "--no-such-flag"),
    # Python's own words follow (they differ between its versions).
    ("ehr", ["--precision", "half"], "argument --precision: invalid "
     "choice: 'half' (choose from "),
    ("translation", ["--strategy=gpus"], "argument --strategy: invalid "
     "choice: 'gpus' (choose from "),
    ("captioning", ["--format", "tiff"], "argument --format: invalid "
     "choice: 'tiff' (choose from "),
    ("ehr", ["--encoder", "lstm"], "argument --encoder: invalid choice: "
     "'lstm' (choose from "),
    ("translation", ["--attention", "bahdanau"], "argument --attention: "
     "invalid choice: 'bahdanau' (choose from "),
]  # fmt: skip
# `--help` of every application, a bad value beside it: the help, exit 0.
HELP_CASES = [
    ("translation", "--source-column"),
    ("entailment", "--hidden-units"),
    ("captioning", "--attention-mode"),
    ("ehr", "--max-events"),
]


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """`(results, heavy)`: each of `CASES` then `HELP_CASES` run by
    `cli.main` in one fresh process, and the heavy modules it imported."""
    folder = tmp_path_factory.mktemp("usage")
    paths = {"missing": folder / "absent.tsv", "file": folder / "notes"}
    paths["file"].write_text("")
    argvs = [
        ["train", app, *(flag.format(**paths) for flag in flags)]
        for app, flags, _ in CASES
    ]
    argvs += [
        ["train", app, "--epochs", "-1", "--help"] for app, _ in HELP_CASES
    ]
    completed = subprocess.run(
        [sys.executable, "-c", _MAIN, json.dumps(argvs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    results, heavy = json.loads(completed.stdout)
    return results, heavy, paths


def test_no_case_imports_tensorflow(answers):
    _, heavy, _ = answers
    assert heavy == []


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_bad_value_is_reported_before_tensorflow_is_imported(answers, case):
    results, _, paths = answers
    app, _, message = CASES[case]
    code, _, stderr = results[case]
    assert code == 2
    usage, error = stderr.splitlines()
    assert usage == (
        f"usage: attention-zoo train {app} [flags]  (--help lists them)"
    )
    expected = f"attention-zoo train {app}: error: {message.format(**paths)}"
    if message.endswith("(choose from "):
        assert error.startswith(expected)
    else:
        assert error == expected


@pytest.mark.parametrize("case", range(len(HELP_CASES)))
def test_help_is_answered_before_tensorflow_is_imported(answers, case):
    results, _, _ = answers
    app, flag = HELP_CASES[case]
    code, stdout, stderr = results[len(CASES) + case]
    assert code == 0 and stderr == ""
    assert stdout.startswith(f"usage: attention-zoo train {app} ")
    assert flag in stdout and "--jit-compile" in stdout


def test_a_value_only_the_application_knows_is_checked_as_briefly(
    tmp_path, capsys
):
    """Flags of one application are checked by its own parser, as early
    as its module allows, with the same two lines."""
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "translation", "--units", "0", "--run-dir",
                  str(run_dir)])  # fmt: skip
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "usage: attention-zoo train translation [flags]  (--help lists them)",
        "attention-zoo train translation: error: --units must be a positive "
        "integer, got 0",
    ]
    assert not run_dir.exists()


def test_a_bad_config_value_comes_before_the_data_is_read(tmp_path, capsys):
    """A value only the config checks is refused before `--data` is read
    (the data file here has a bad line, which is not the error)."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a premise without a label\n")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "entailment", "--data", str(pairs), "--format",
                  "tsv", "--intra-attention", "--no-attention", "--run-dir",
                  str(tmp_path / "run")])  # fmt: skip
    assert exit_info.value.code == 2
    assert "needs `attention=True`" in capsys.readouterr().err


def test_help_is_not_checked_first(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "entailment", "--epochs", "-1", "--help"])
    assert exit_info.value.code == 0
    assert "--hidden-units" in capsys.readouterr().out
