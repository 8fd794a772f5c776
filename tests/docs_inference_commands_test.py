"""Every inference command line of README and the documentation site
(`translate`, `predict`, `caption`, `models`, `--help`) runs as written,
in process, and does what the page says: exit code 0, a line per input,
and the picture its `--plot` names.

Each runs in a folder holding what the page assumes is there: the input
files it names (a photo, `dog.jpg`, `cat.png`) and, for the guides'
`saved_models/APP` (the export their `train` command writes), the shipped
model of that application, standing in for it."""

import os
import shutil

import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.common import zoo
from tests import docs_commands_test

INFERENCE_JOBS = ("translate", "predict", "caption", "models", "--help")
PHOTO = os.path.join(
    os.path.dirname(cli.__file__), "demo", "examples", "riders-on-beach.jpg"
)
# The guides' exports, stood in for by the shipped model of each
# application.
STAND_INS = {
    "saved_models/translation": "translation-spa-eng",
    "saved_models/entailment": "entailment-snli",
    "saved_models/captioning": "captioning-flickr8k",
}
LINES = docs_commands_test.documented_lines_of(INFERENCE_JOBS)


def _inputs(argv):
    """The images a command reads: its `.jpg` and `.png` arguments that
    are not the value of `--plot`."""
    return [
        a
        for i, a in enumerate(argv)
        if a.endswith((".jpg", ".png")) and (i == 0 or argv[i - 1] != "--plot")
    ]


def _outputs(argv):
    """The pictures a command writes: `--plot FILE`, and for the images
    of `caption` after the first, `FILE-2`, `FILE-3`, ..."""
    plots = [argv[i + 1] for i, a in enumerate(argv) if a == "--plot"]
    if argv[0] != "caption":
        return plots
    more = range(2, len(_inputs(argv)) + 1)
    return plots + [
        f"{stem}-{n}{suffix}"
        for stem, suffix in map(os.path.splitext, plots)
        for n in more
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The working folder of the commands: what the pages assume."""
    root = tmp_path_factory.mktemp("documented")
    shipped = {model.name: model.path for model in zoo.shipped_models()}
    for link, name in STAND_INS.items():
        os.makedirs(root / os.path.dirname(link), exist_ok=True)
        os.symlink(shipped[name], root / link)
    return root


def test_the_pages_show_inference_commands():
    jobs = {argv[0] for _, argv in LINES}
    assert {"translate", "predict", "caption", "models"} <= jobs
    assert len(LINES) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("line, argv", LINES, ids=[line for line, _ in LINES])
def test_a_documented_inference_command_runs(
    line, argv, folder, monkeypatch, capsys
):
    monkeypatch.chdir(folder)
    for name in _inputs(argv):
        shutil.copyfile(PHOTO, name)  # a real photo, whatever its suffix
    for name in _outputs(argv):
        if os.path.exists(name):
            os.remove(name)
    if argv[0] == "--help":
        with pytest.raises(SystemExit) as exit:
            cli.main(list(argv))
        assert exit.value.code == 0
        assert "usage" in capsys.readouterr().out
        return
    assert cli.main(list(argv)) == 0, line
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed, line
    if argv[0] == "caption":
        # `path<TAB>caption`, a line per image.
        captions = [p.split("\t") for p in printed if "\t" in p]
        assert [path for path, _ in captions] == _inputs(argv)
        assert all(caption.strip() for _, caption in captions)
    for name in _outputs(argv):
        with open(name, "rb") as f:
            assert f.read(4) == b"\x89PNG", name
