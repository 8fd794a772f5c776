"""A bad flag value stops `attention-zoo train APP` with a usage error that
names it, before anything is written; not with a traceback."""

import json

import pytest

from attention_zoo_apps import cli


@pytest.mark.parametrize(
    "app, flags, message",
    [
        ("translation", ["--units", "0"], "--units must be a positive int"),
        ("entailment", ["--epochs", "0"], "--epochs must be a positive int"),
        ("ehr", ["--units", "0"], "--units must be a positive integer, got"),
        ("captioning", ["--augment"], "--augment mirrors the training"),
        (
            "translation",
            ["--average-checkpoints", "2", "--patience", "1"],
            "--average-checkpoints averages the last epochs, --patience",
        ),
        (
            "translation",
            ["--choose-search", "--beam-size", "4"],
            "--choose-search picks the beam size on the validation split",
        ),
        (
            "translation",
            ["--choose-search", "--validation-fraction", "0"],
            "--choose-search decodes the validation split: it needs one",
        ),
        (
            "captioning",
            ["--export-precision", "int8"],
            "--export-precision int8 is the export's: give --export DIR",
        ),
        (
            "captioning",
            ["--export-fold-batch-norms"],
            "--export-fold-batch-norms is the export's: give --export DIR",
        ),
        (
            "translation",
            ["--export-precision", "int8", "--jit-compile", "on"]
            + ["--export", "saved_models/x"],
            "--export-precision int8 runs oneDNN's int8 kernels, which XLA",
        ),
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


def _export_folder(tmp_path, application):
    """A folder holding version 1 of an `application` export (its
    metadata only: the check reads nothing else)."""
    folder = tmp_path / "saved_models" / "model"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "metadata.json").write_text(
        json.dumps({"application": application})
    )
    return folder


@pytest.mark.parametrize("app", ["translation", "entailment", "ehr"])
def test_export_to_another_applications_folder_is_refused(
    app, tmp_path, capsys
):
    other = "captioning"
    folder = _export_folder(tmp_path, other)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(
            ["train", app, "--run-dir", str(run_dir), "--export", str(folder)]
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert f"--export {folder} holds version 1 of a {other} model" in error
    assert f"saved_models/{app}" in error
    assert not run_dir.exists()  # refused before training
    assert sorted(p.name for p in folder.iterdir()) == ["1"]


def test_export_to_a_version_folder_or_a_file_is_refused(tmp_path, capsys):
    version = _export_folder(tmp_path, "captioning") / "1"
    (version / "saved_model.pb").write_bytes(b"")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    for export, problem in ((version, "is a SavedModel"), (a_file, "a file")):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(
                ["train", "captioning", "--synthetic-images", "40",
                 "--run-dir", str(tmp_path / "run"), "--export", str(export)]
            )  # fmt: skip
        assert exit_info.value.code == 2
        assert problem in capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize(
    "app, flags, message",
    [
        ("ehr", ["--data", "{file}"], "is a file: records are a folder"),
        ("entailment", ["--data", "{folder}"], "Cannot detect the format"),
        ("translation", ["--run-dir", "{file}"], "a file, not a folder"),
    ],
)
def test_a_bad_path_is_a_usage_error(app, flags, message, tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    folder = tmp_path / "empty"
    folder.mkdir()
    flags = [f.format(file=a_file, folder=folder) for f in flags]
    if "--run-dir" not in flags:
        flags += ["--run-dir", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", app, *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err.splitlines()[-1]
