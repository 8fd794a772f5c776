"""A bad flag value of `attention-zoo train APP` is a short usage error that
comes before TensorFlow is imported or any data is read: two lines (a
usage hint, then the error naming the flag and the value), exit code 2."""

import pathlib
import subprocess
import sys

import pytest

from applications import cli

ROOT = pathlib.Path(__file__).resolve().parents[3]
# Runs `cli.main(argv)`, then prints its exit code and which of the heavy
# modules it imported.
_MAIN = """
import sys
from applications import cli
try:
    code = cli.main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = [m for m in ("tensorflow", "keras", "jax") if m in sys.modules]
print(code, ",".join(heavy) or "none")
"""


def _main_in_a_process(argv):
    """`(exit code, heavy modules imported, stderr lines)` of `cli.main`."""
    completed = subprocess.run(
        [sys.executable, "-c", _MAIN, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    code, heavy = completed.stdout.split()
    return int(code), heavy, completed.stderr.splitlines()


@pytest.mark.parametrize(
    "app, flags, message",
    [
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
        # Python's own words follow (they differ between its versions).
        ("ehr", ["--precision", "half"], "argument --precision: invalid "
         "choice: 'half' (choose from "),
        ("translation", ["--strategy=gpus"], "argument --strategy: invalid "
         "choice: 'gpus' (choose from "),
    ],
)  # fmt: skip
def test_a_bad_value_is_reported_before_tensorflow_is_imported(
    app, flags, message, tmp_path
):
    paths = {"missing": tmp_path / "absent.tsv", "file": tmp_path / "notes"}
    paths["file"].write_text("")
    flags = [flag.format(**paths) for flag in flags]
    code, heavy, lines = _main_in_a_process(["train", app, *flags])
    assert code == 2
    assert heavy == "none"
    usage, error = lines
    assert usage == (
        f"usage: attention-zoo train {app} [flags]  (--help lists them)"
    )
    expected = f"attention-zoo train {app}: error: {message.format(**paths)}"
    if message.endswith("(choose from "):
        assert error.startswith(expected)
    else:
        assert error == expected


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
