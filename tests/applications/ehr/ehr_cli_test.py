"""`attention-zoo train ehr`: synthetic runs, records without notes,
export, resume, and a malformed file (the guide's long-format, FHIR and
MIMIC lines run in `tests/docs_train_commands_test.py`)."""

import json

import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.ehr import flags
from attention_zoo_apps.ehr import train
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from attention_zoo_apps.ehr.synthetic import save_synthetic_long_format


def _train(tmp_path, *flags):
    return cli.main(
        [
            "train",
            "ehr",
            "--epochs",
            "1",
            "--embedding-dim",
            "8",
            "--units",
            "8",
            "--no-tensorboard",
            "--run-dir",
            str(tmp_path / "run"),
            *flags,
        ]
    )


def test_train_on_synthetic_patients_reports_and_exports(tmp_path, capsys):
    export_dir = tmp_path / "saved_models" / "ehr"
    (export_dir / "1").mkdir(parents=True)  # an earlier version
    flags = ["--synthetic-patients", "80", "--export", str(export_dir)]
    assert _train(tmp_path, *flags) == 0
    out = capsys.readouterr().out
    assert "validation: AUROC" in out and "test: AUROC" in out
    assert "Brier" in out and " at " in out  # top events of positives
    assert (tmp_path / "run" / "model.weights.h5").exists()
    assert (tmp_path / "run" / "codes.txt").exists()
    assert "test AUROC with uniform attention weights: " in out
    reliance = json.loads(
        (tmp_path / "run" / "attention_reliance.json").read_text()
    )
    assert set(reliance) == {"auroc", "uniform_auroc", "patients"}
    assert (export_dir / "2" / "saved_model.pb").exists()
    assert (export_dir / "2" / "config.json").exists()


def test_records_without_notes_train_on_events_only(tmp_path, capsys):
    """A folder with no notes.csv (as MIMIC-IV's demo has no notes)."""
    import json

    folder = tmp_path / "records"
    save_synthetic_long_format(make_synthetic_patients(60, seed=3), folder)
    (folder / "notes.csv").unlink()
    assert _train(tmp_path, "--data", str(folder)) == 0
    assert "no notes: events only" in capsys.readouterr().out
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["use_notes"] is False


def test_a_malformed_file_exits_with_its_path_and_line(tmp_path, capsys):
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / "labels.csv").write_text(
        "patient_id,label,prediction_time\np1,1,24\n", encoding="utf-8"
    )
    (folder / "events.csv").write_text(
        "patient_id,time,code,value\np1,1.5,lab:a,2\np1,soon,lab:b,\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as exit_info:
        _train(tmp_path, "--data", str(folder))
    assert exit_info.value.code == 2
    assert "events.csv:3" in capsys.readouterr().err


def test_mimic_folders_are_detected(tmp_path, monkeypatch):
    from attention_zoo_apps.ehr import mimic

    calls = []
    monkeypatch.setattr(
        mimic, "load_mimic_iv", lambda root, hours: calls.append(hours)
    )
    (tmp_path / "hosp").mkdir()
    (tmp_path / "hosp" / "admissions.csv.gz").write_bytes(b"")
    argv = ["--data", str(tmp_path), "--prediction-hours", "12"]
    assert train.load_records(flags.train_parser().parse_args(argv))[1] is None
    assert calls == [12.0]


@pytest.mark.parametrize("format", ["auto", "long", "mimic", "mimic3", "fhir"])
def test_train_and_explain_read_records_of_every_format(format):
    from attention_zoo_apps.ehr import data

    assert format == "auto" or format in data.FORMATS
    explain = flags.infer_parser().parse_args(
        ["run", "--patient", "p1", "--format", format, "--data", "d"]
    )
    trained = flags.train_parser().parse_args(
        ["--format", format, "--data", "d"]
    )
    for args in (explain, trained):
        assert (args.format, args.data, args.prediction_hours) == (
            format,
            "d",
            24.0,
        )
