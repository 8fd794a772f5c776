"""`attention_zoo_apps.commands.infer_flags`: every command that runs an export
checks
the folder before feeding it. Another application's export, an export
without `metadata.json` whose signature takes other inputs, a folder
without a SavedModel and an unreadable SavedModel each end in one line
naming the folder and what to do (exit code 2), never a traceback; empty
inputs are refused by name.

The exports here are stand-ins (`tiny_bundles.save_stand_in`: a
`serving_default` that takes the application's inputs, and its
`metadata.json`): the checks read only those, and saving four takes a
second where training four models takes a minute.
"""

import argparse
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import cli
from attention_zoo_apps import registry
from tests.support import tiny_bundles

SIGNATURE_INPUTS = tiny_bundles.SIGNATURE_INPUTS
# The applications whose inference command runs an export.
SERVING = [a for a in registry.all_applications() if a.reads_exports]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Application -> a folder of versions holding its stand-in export."""
    base = tmp_path_factory.mktemp("saved_models")
    folders = {}
    for application in SIGNATURE_INPUTS:
        folders[application] = str(base / application)
        path = os.path.join(folders[application], "1")
        tiny_bundles.save_stand_in(application, path)
    return folders


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    path = tmp_path_factory.mktemp("images") / "shape.png"
    pixels = tf.constant(np.zeros((8, 8, 3), np.uint8))
    path.write_bytes(tf.io.encode_png(pixels).numpy())
    return str(path)


def _argv(command, directory, image):
    """A complete command line of `command` for the export `directory`."""
    inputs = {
        "translate": ["hola"],
        "predict": ["--premise", "a dog runs", "--hypothesis", "an animal"],
        "caption": [image],
    }
    return [command, str(directory), *inputs[command]]


def _refused(argv, capsys):
    """The one line `argv` ends with (exit code 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize(
    "served, exported",
    [
        (a.infer_command, other)
        for a in SERVING
        for other in SIGNATURE_INPUTS
        if other != a.name
    ],
)
def test_another_applications_export_is_named_with_its_command(
    served, exported, exports, image, capsys
):
    line = _refused(_argv(served, exports[exported], image), capsys)
    assert line.startswith(f"attention-zoo {served}: error: ")
    assert f"{exports[exported]}/1 is an export of {exported}," in line
    command = registry.get(exported).infer_command
    if exported == "ehr":
        assert "no attention-zoo command runs ehr exports" in line
    else:
        assert f"attention-zoo {command} {exports[exported]}" in line


@pytest.mark.parametrize("served", [a.infer_command for a in SERVING])
def test_an_export_without_metadata_names_its_signatures_inputs(
    served, exports, image, tmp_path, capsys
):
    # Captioning's stand-in, or translation's for `caption`.
    exported = "translation" if served == "caption" else "captioning"
    copy = tmp_path / "copied"
    shutil.copytree(os.path.join(exports[exported], "1"), copy)
    os.remove(copy / "metadata.json")
    line = _refused(_argv(served, copy, image), capsys)
    name = next(iter(SIGNATURE_INPUTS[exported]))
    assert "no readable metadata.json" in line
    assert f"serving_default takes {name} (string [None])" in line
    command = registry.get(exported).infer_command
    assert f"a {exported} export: run it with `attention-zoo {command}" in line


def test_unreadable_metadata_falls_back_on_the_signature(
    exports, tmp_path, capsys
):
    copy = tmp_path / "copied"
    shutil.copytree(os.path.join(exports["translation"], "1"), copy)
    (copy / "metadata.json").write_text("{not json")
    assert cli.main(["translate", str(copy), "hola"]) == 0
    assert capsys.readouterr().out == "hola\thola\n"


def test_a_signature_that_does_not_match_its_metadata_is_refused(
    exports, tmp_path, capsys
):
    copy = tmp_path / "copied"
    shutil.copytree(os.path.join(exports["entailment"], "1"), copy)
    metadata = json.loads((copy / "metadata.json").read_text())
    metadata["application"] = "translation"
    (copy / "metadata.json").write_text(json.dumps(metadata))
    line = _refused(["translate", str(copy), "hola"], capsys)
    assert "serving_default takes hypothesis (string [None]), premise" in line
    assert "not text" in line


@pytest.mark.parametrize("served", [a.infer_command for a in SERVING])
@pytest.mark.parametrize(
    "folder, expected",
    [
        ("missing", "does not exist"),
        ("empty", "No SavedModel in"),
        ("file", "is a file, not an export folder"),
        ("unfinished", "no saved_model.pb"),
        ("corrupt", "cannot load the SavedModel in"),
    ],
)
def test_a_folder_without_a_usable_savedmodel_is_one_line(
    served, folder, expected, exports, image, tmp_path, capsys
):
    path = tmp_path / folder
    if folder == "empty":
        path.mkdir()
    elif folder == "file":
        path.write_text("not a model")
    elif folder == "unfinished":
        (path / "3").mkdir(parents=True)  # a version without its model
    elif folder == "corrupt":  # the command's own application's export
        (own,) = [a.name for a in SERVING if a.infer_command == served]
        shutil.copytree(os.path.join(exports[own], "1"), path)
        (path / "saved_model.pb").write_bytes(b"truncated")
    line = _refused(_argv(served, path, image), capsys)
    assert expected in line and str(path) in line


@pytest.mark.parametrize(
    "argv, named",
    [
        (["translate", "{}", "hola", " "], "text 2 is empty"),
        (["predict", "{}", "--premise", "", "--hypothesis", "b"], "premise 1"),
        (
            ["predict", "{}", "--premise", "a", "--hypothesis", "\t"],
            "hypothesis 1",
        ),
    ],
)
def test_empty_inputs_are_refused_by_name(argv, named, exports, capsys):
    application = "translation" if argv[0] == "translate" else "entailment"
    argv = [a.format(exports[application]) for a in argv]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err


def test_the_stand_ins_take_the_registered_inputs():
    for application in registry.all_applications():
        expected = SIGNATURE_INPUTS[application.name]
        assert set(application.export_inputs) == set(expected)


def test_plot_files_are_named_as_written(tmp_path, capsys):
    # matplotlib adds `.png` to a path without an extension.
    from attention_zoo_apps.captioning.infer import plot_paths
    from attention_zoo_apps.entailment import infer

    stem = str(tmp_path / "figure")
    assert plot_paths(stem, 2) == [f"{stem}.png", f"{stem}-2.png"]
    assert plot_paths(f"{stem}.jpg", 1) == [f"{stem}.jpg"]
    args = argparse.Namespace(plot=stem, premise=["a"], hypothesis=["b"])
    infer._plot(args, np.full((2, 3), 1 / 3, np.float32), "neutral")
    assert capsys.readouterr().out == f"wrote {stem}.png\n"
    assert os.listdir(tmp_path) == ["figure.png"]
