"""A bad flag value stops `attention-zoo train APP` with a usage error that
names it, before anything is written; not with a traceback."""

import pytest

from applications import cli


@pytest.mark.parametrize(
    "app, flags, message",
    [
        ("translation", ["--units", "0"], "`units` must be positive"),
        ("entailment", ["--epochs", "0"], "`epochs` must be positive"),
        ("ehr", ["--units", "0"], "`units` must be positive"),
        ("captioning", ["--augment"], "--augment mirrors the training"),
    ],
)
def test_a_bad_value_is_a_usage_error(app, flags, message, tmp_path, capsys):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", app, *flags, "--run-dir", str(run_dir)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert f"attention-zoo train {app}: error: {message}" in error
    assert not run_dir.exists()
