"""`--export-precision int8` for a model without a layer to quantize (the
EHR model's Dense layers are small) ends `attention-zoo train` with one
line and exit code 2 before the first epoch trains, and, for a finished
run that goes straight to its export, before anything is exported."""

import pytest

from attention_zoo_apps import cli

TINY = ["--synthetic-patients", "120", "--units", "8", "--epochs", "1"]
MESSAGE = (
    "attention-zoo train ehr: error: --export-precision int8: risk_model "
    "has no Dense layer with 524,288 or more kernel entries"
)


def _train(run_dir, *flags):
    cli.main(["train", "ehr", *TINY, "--run-dir", str(run_dir), *flags])


def _refused(run_dir, export, capsys):
    """The int8 run's stdout; asserts its one-line refusal."""
    with pytest.raises(SystemExit) as exit_info:
        _train(run_dir, "--export", str(export), "--export-precision", "int8")
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert err.splitlines()[-1].startswith(MESSAGE)
    assert "Traceback" not in err
    assert not export.exists() or not any(export.iterdir())
    return out


def test_a_new_run_is_refused_before_its_first_epoch(tmp_path, capsys):
    out = _refused(tmp_path / "run", tmp_path / "export", capsys)
    assert "val_loss" not in out  # no epoch ended
    # The check is the first callback: the history was not begun.
    assert not (tmp_path / "run" / "history.csv").exists()


def test_a_finished_run_is_refused_before_its_export(tmp_path, capsys):
    _train(tmp_path / "run", "--no-tensorboard")
    capsys.readouterr()
    out = _refused(tmp_path / "run", tmp_path / "export", capsys)
    assert "val_loss" not in out  # nothing trained again
    assert (tmp_path / "run" / "history.csv").exists()  # the run is kept


def test_a_cpu_without_the_int8_op_is_refused_in_one_line(
    tmp_path, capsys, monkeypatch
):
    from attention_zoo.export import int8

    monkeypatch.setattr(int8, "MIN_KERNEL_SIZE", 1)  # a layer to quantize
    monkeypatch.setattr(int8, "int8_available", lambda: False)
    export = tmp_path / "export"
    with pytest.raises(SystemExit) as exit_info:
        _train(
            tmp_path / "run",
            "--export",
            str(export),
            "--export-precision",
            "int8",
        )
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(
        "attention-zoo train ehr: error: --export-precision int8: "
        "TensorFlow cannot run oneDNN's int8 matmul on this CPU"
    )
    assert "Traceback" not in err and not export.exists()
