"""Every `attention-zoo serve` line of README, the documentation site and
the model cards starts a server as written, which answers for each model
the line names: its status is `AVAILABLE` and a prediction gets a 200.

Each line runs in a folder of its own holding what the page assumes is
there: `saved_models/` with a stand-in export of each model folder the
line names (`tiny_bundles.save_stand_in`, an export of the application's
signature that loads in a moment: the applications' own exports are
served in `tests/serving/`), and the files its flags name: the serving
page's model config file (its `/srv/models/` folders moved into the
working folder), a batching parameters file and the page's monitoring
config. Only the ports change: the server listens on free ones
(`ServerProcess` adds `--port` and `--rest_api_port`, which take over the
line's).

The model cards' `tensorflow_model_server` lines run with `attention-zoo
serve` in its place, from the repository's root (their `$PWD`), as the
serving page says a TF Serving command line does; they differ only in
the shipped model they serve, so the smallest's runs.

Lines that differ only in the model folder they name run once
(`_shape`). The lines that serve a shipped model by name run in
`tests/serving/shipped_test.py`, which starts `attention-zoo serve
translation-spa-eng` as a user does and runs the serving page's client
snippet against it; the page's `curl` examples run against a server of
every application in `tests/serving/rest_grpc_api_test.py`."""

import pathlib
import re
import shlex
import sys

import pytest

from attention_zoo.serving.process import ServerProcess
from attention_zoo_apps.common import zoo
from tests import docs_commands_test
from tests.support import serving_page
from tests.support import tiny_bundles

pytestmark = pytest.mark.slow

# The flags whose values the test replaces (free ports).
PORTS = {"--port", "--rest_api_port"}
SHIPPED = {model.name for model in zoo.shipped_models()}
MODELS = "saved_models"  # the pages' folder of model folders
# The files the flags name: how the test writes them.
BATCHING = (
    "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 1000 }\n"
)
MONITORING = "prometheus_config { enable: true }\n"  # as the page gives it
PAGE_MODELS = "/srv/models/"  # where the page's model config file looks
CONFIG_ENTRY = re.compile(r'name: "([^"]+)" base_path: "([^"]+)"')


def _flag(word):
    return word.split("=", 1)[0]


def _options(words):
    """`{--flag: value}` of a line's `--flag=value` words."""
    return dict(w.split("=", 1) for w in words if "=" in w)


def _kind(word):
    """What a line's folder or name argument is."""
    if word in SHIPPED:
        return "a shipped model's name"
    return "a folder of models" if word == MODELS else "a model folder"


def _shape(argv):
    """What makes a line's server differ from another's: the flags it
    gives (but the ports) and what its arguments are."""
    words = argv[1:]
    flags = {_flag(w) for w in words if w.startswith("--")} - PORTS
    kinds = tuple(_kind(w) for w in words if not w.startswith("--"))
    return frozenset(flags), kinds


def _lines():
    """`(line, argv)` of the documented `serve` lines, the first of each
    shape, but the shipped models' (the module docstring says where they
    run)."""
    runs = {}
    for line, argv in docs_commands_test.documented_lines_of(("serve",)):
        shape = _shape(argv)
        if "a shipped model's name" not in shape[1]:
            runs.setdefault(shape, (line, list(argv)))
    return list(runs.values())


LINES = _lines()
ROOT = pathlib.Path(__file__).resolve().parents[1]
TF_SERVING = "tensorflow_model_server"


def _tf_serving_lines():
    """`(line, argv)` of the pages' `tensorflow_model_server` lines."""
    for _, line in docs_commands_test.shell_lines():
        if line.startswith(f"{TF_SERVING} "):
            yield line, shlex.split(line)


def _size(argv):
    """The bytes of the model folder a `tensorflow_model_server` line
    serves."""
    base = _options(argv)["--model_base_path"]
    folder = ROOT / base.replace("$PWD/", "")
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


TF_SERVING_LINES = sorted(_tf_serving_lines(), key=lambda la: _size(la[1]))


def _application(name):
    """The application a model folder's stand-in is of: the one its name
    starts with (`saved_models/entailment-snli`), else translation's."""
    for application in tiny_bundles.APPLICATIONS:
        if name.startswith(application):
            return application
    return "translation"


def _stand_in(folder, name):
    """`saved_models/NAME/1` in `folder`, a stand-in export; its path."""
    path = folder / MODELS / name
    tiny_bundles.save_stand_in(_application(name), str(path / "1"))
    return path


def _prepare(folder, argv):
    """Writes what `argv` names into `folder`; returns the line's words
    as the server gets them (`$PWD` expanded) and `{served model name:
    application}`."""
    words = [w.replace("$PWD", str(folder)) for w in argv[1:]]
    served = {}
    options = _options(words)
    for word in words:
        if word == MODELS:
            for application in tiny_bundles.APPLICATIONS:
                _stand_in(folder, application)
                served[application] = application
        elif word.startswith(f"{MODELS}/"):
            name = word.split("/", 1)[1]
            _stand_in(folder, name)
            served[name] = _application(name)
    if "--model_base_path" in options:
        base = options["--model_base_path"]
        name = base.rsplit("/", 1)[1]
        _stand_in(folder, name)
        served[options.get("--model_name", "default")] = _application(name)
    if "--model_config_file" in options:
        config = serving_page.model_config_file().replace(
            PAGE_MODELS, f"{folder / MODELS}/"
        )
        (folder / options["--model_config_file"]).write_text(config)
        for name, base in CONFIG_ENTRY.findall(config):
            folder_name = base.rsplit("/", 1)[1]
            _stand_in(folder, folder_name)
            served[name] = _application(folder_name)
    if "--batching_parameters_file" in options:
        (folder / options["--batching_parameters_file"]).write_text(BATCHING)
    if "--monitoring_config_file" in options:
        (folder / options["--monitoring_config_file"]).write_text(MONITORING)
    return words, served


def test_the_lines_cover_every_way_to_name_a_model():
    shapes = {_shape(argv) for _, argv in LINES}
    assert {kinds for _, kinds in shapes} == {
        ("a model folder",),
        ("a folder of models",),
        (),
    }


COMMAND = [sys.executable, "-m", "attention_zoo_apps.cli", "serve"]


def _predicted(server, name, application):
    """Checks that model NAME is `AVAILABLE` and answers a prediction of
    the application's inputs; returns `(answer's outputs, examples sent)`."""
    status, answer = server.rest(f"/v1/models/{name}")
    assert status == 200, (name, answer)
    states = [v["state"] for v in answer["model_version_status"]]
    assert states == ["AVAILABLE"], (name, answer)
    columns = tiny_bundles.columnar_inputs(application)
    status, answer = server.rest(
        f"/v1/models/{name}:predict", {"inputs": columns}
    )
    assert status == 200, (name, answer)
    return answer["outputs"], len(next(iter(columns.values())))


@pytest.mark.parametrize("line, argv", LINES, ids=[line for line, _ in LINES])
def test_a_documented_serve_line_serves(line, argv, tmp_path, monkeypatch):
    words, served = _prepare(tmp_path, argv)
    assert served, line
    monkeypatch.chdir(tmp_path)  # the server starts where the line runs
    with ServerProcess(words, command=COMMAND) as server:
        for name, application in served.items():
            outputs, sent = _predicted(server, name, application)
            # the stand-in's one output, its first input (TF Serving
            # writes a signature's only output without its name)
            assert len(outputs) == sent, (name, outputs)
        if "--monitoring_config_file" in line:
            page = server.text("/monitoring/prometheus/metrics")
            assert ":tensorflow:serving:request_count" in page


def test_a_model_cards_tf_serving_line_runs_with_attention_zoo_serve(
    monkeypatch,
):
    assert len(TF_SERVING_LINES) >= 4  # a line on each card
    line, argv = TF_SERVING_LINES[0]
    words = [w.replace("$PWD", str(ROOT)) for w in argv[1:]]
    name = _options(words)["--model_name"]
    monkeypatch.chdir(ROOT)
    with ServerProcess(words, command=COMMAND) as server:
        outputs, sent = _predicted(server, name, _application(name))
        for output, rows in outputs.items():
            assert len(rows) == sent, (line, output)
