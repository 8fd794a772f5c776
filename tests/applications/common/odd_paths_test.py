"""Odd `--data` paths: a FIFO is read (once, though loaders read a file's
first line and then all of it), and a missing path, a broken symbolic link,
a loop of them, an unreadable path or a folder where a file is read each
get their own one-line usage error naming the flag and the path."""

import errno
import os
import threading

import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.commands import train_steps
from attention_zoo_apps.common import flag_checks
from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.common.loaders import read_once
from attention_zoo_apps.entailment import data as entailment

PAIRS = (
    "premise\thypothesis\tlabel\n"
    "a man sleeps\ta person rests\tentailment\n"
    "a dog runs\ta cat sits\tcontradiction\n"
)
DEADLINE = 60  # seconds


def _read_while_writing(fifo, text, read):
    """`read()`, run while another thread writes `text` into `fifo` once.

    A reader that opens the FIFO a second time would wait for a writer
    for ever: after the deadline one is opened and closed, so the read
    ends (and the test fails) instead of hanging.
    """

    def write():
        with open(fifo, "w") as f:
            f.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = {}

    def run():
        try:
            result["value"] = read()
        except Exception as error:  # reported below
            result["error"] = error

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(DEADLINE)
    hung = reader.is_alive()
    if hung:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        reader.join(DEADLINE)
    writer.join(DEADLINE)
    assert not hung, "the FIFO was opened twice: the second read hangs"
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.mark.parametrize("format", ["tsv", "auto"])
def test_a_fifo_is_read_once(format, tmp_path):
    fifo = tmp_path / "pairs.tsv"
    os.mkfifo(fifo)
    assert flag_checks.input_path_problem(str(fifo)) is None
    examples = _read_while_writing(
        fifo, PAIRS, lambda: entailment.load_examples(str(fifo), format)
    )
    assert examples.premises == ["a man sleeps", "a dog runs"]


def test_inside_read_once_a_fifo_gives_its_bytes_to_every_read(tmp_path):
    fifo = tmp_path / "lines.txt"
    os.mkfifo(fifo)

    def read_twice():
        with read_once(fifo):
            return list(iter_lines(fifo)), list(iter_lines(fifo))

    lines = [(1, "one"), (2, "two")]
    assert _read_while_writing(fifo, "one\ntwo\n", read_twice) == (lines,) * 2
    # Outside, a FIFO is the stream it is: the next writer's lines.
    again = _read_while_writing(fifo, "three\n", lambda: list(iter_lines(fifo)))
    assert again == [(1, "three")]


def test_a_commands_fifo_is_read_once(tmp_path):
    """`--data FIFO` without `--format`: `train entailment` detects the
    format (reading the first line), then loads it, from one stream."""
    from attention_zoo_apps.entailment import flags
    from attention_zoo_apps.entailment import train

    fifo = tmp_path / "pairs.tsv"
    os.mkfifo(fifo)
    parser = flags.train_parser()
    args, _ = train_steps.parse_flags(parser, ["--data", str(fifo)])

    def load():
        format = train.data_format(args)
        return format, train.load_splits(args, format)

    header, *rows = PAIRS.splitlines(keepends=True)
    text = header + "".join(rows) * 20
    format, splits = _read_while_writing(fifo, text, load)
    assert format == "tsv"
    assert sum(len(split) for split in splits) == 40


def _odd_path(kind, tmp_path):
    path = tmp_path / f"{kind}.tsv"
    if kind == "loop":
        os.symlink(tmp_path / "loop-b", path)
        os.symlink(path, tmp_path / "loop-b")
    elif kind == "broken":
        os.symlink(tmp_path / "gone.tsv", path)
    elif kind == "folder":
        path.mkdir()
    return path


@pytest.mark.parametrize(
    "kind, problem",
    [
        ("missing", "no such file or folder"),
        ("broken", "a broken symbolic link (to {tmp}/gone.tsv)"),
        ("loop", "a loop of symbolic links (too many levels)"),
    ],
)
@pytest.mark.parametrize("app", ["entailment", "translation"])
def test_an_odd_path_has_its_own_message(app, kind, problem, tmp_path, capsys):
    path = _odd_path(kind, tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", app, "--data", str(path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"attention-zoo train {app}: error: --data {path}: "
        + problem.format(tmp=tmp_path)
    )


def test_a_folder_where_a_file_is_read(tmp_path, capsys):
    path = _odd_path("folder", tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "entailment", "--data", str(path), "--format",
                  "tsv", "--run-dir", str(tmp_path / "run")])  # fmt: skip
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"attention-zoo train entailment: error: --data {path}: a folder, "
        "not a file"
    )


def test_a_loop_without_format_is_not_called_missing(tmp_path):
    path = _odd_path("loop", tmp_path)
    with pytest.raises(OSError) as error:
        entailment.detect_format(str(path))
    assert error.value.errno == errno.ELOOP


def test_an_unreadable_path(tmp_path, monkeypatch, capsys):
    path = tmp_path / "secret.tsv"
    path.write_text(PAIRS)
    # Root reads every file: the permission is taken away in `os.access`.
    real_access = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda p, mode, **kw: p != str(path) and real_access(p, mode, **kw),
    )
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "ehr", "--data", str(path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"attention-zoo train ehr: error: --data {path}: permission denied "
        "(cannot read it)"
    )


def test_an_os_error_while_loading_names_the_flag_and_the_path(capsys):
    parser = flag_checks.FlagParser(prog="prog")
    parser.add_argument("--data")
    parser.parsed_args = parser.parse_args(["--data", "x.tsv"])
    for path, where in (("x.tsv", "--data x.tsv"), ("y.tsv", "y.tsv")):
        with pytest.raises(SystemExit):
            with train_flags.usage_errors(parser):
                raise PermissionError(errno.EACCES, "Permission denied", path)
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"prog: error: {where}: permission denied (cannot read it)"
        )
