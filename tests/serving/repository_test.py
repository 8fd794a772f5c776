"""A folder of model folders (a model repository, like `saved_models/`)
given as the MODEL shortcut is served as its models, each by its name;
`--model_base_path` stays one model, as in TF Serving, and says what to
run when it finds a repository."""

import logging

import pytest

from attention_zoo.serving import flags
from attention_zoo.serving.model_server import ModelServer
from attention_zoo.serving.process import ServerProcess
from tests.support.scaling_models import save_scaling_model


@pytest.fixture
def repository(tmp_path):
    """`tmp/models/{double,triple}/1` (empty stand-ins) and two folders
    that are not models."""
    root = tmp_path / "models"
    for name in ("double", "triple"):
        (root / name / "1").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / ".double.tmp-1" / "1").mkdir(parents=True)
    (root / "README.md").write_text("models\n")
    return root


def test_the_shortcut_serves_each_model_folder_by_name(repository):
    options = flags.parse([str(repository)])
    assert [(m.name, m.base_path) for m in options.models] == [
        ("double", str(repository / "double")),
        ("triple", str(repository / "triple")),
    ]


def test_a_folder_with_versions_is_one_model(repository):
    (repository / "3").mkdir()
    (options,) = [flags.parse([str(repository)])]
    assert [m.name for m in options.models] == ["models"]
    (model,) = flags.parse([str(repository / "double")]).models
    assert model.name == "double"


def test_model_name_with_a_repository_is_a_usage_error(repository, capsys):
    with pytest.raises(SystemExit) as exited:
        flags.parse([str(repository), "--model_name=m"])
    assert exited.value.code == 2
    assert "a folder of models (double, triple)" in capsys.readouterr().err


def test_model_base_path_on_a_repository_says_what_to_run(repository, caplog):
    options = flags.parse([f"--model_base_path={repository}"])
    (model,) = options.models  # one model, as TF Serving reads the flag
    assert model.name == "default"
    server = ModelServer(options.models, poll_seconds=0)
    with caplog.at_level(logging.INFO, "attention_zoo.serving"):
        server.start()
    server.stop()
    warning = caplog.text
    assert "No versions of model default found" in warning
    assert "it holds the models double, triple" in warning
    assert f"attention-zoo serve {repository}" in warning
    assert (
        f'config {{ name: "triple" base_path: "{repository / "triple"}" '
        'model_platform: "tensorflow" }' in warning
    )


def test_a_server_over_a_repository_answers_each_model(tmp_path):
    root = tmp_path / "repository"
    save_scaling_model(str(root / "double" / "1"), 2.0)
    save_scaling_model(str(root / "triple" / "2"), 3.0)
    with ServerProcess([str(root)]) as server:
        for name, factor in (("double", 2.0), ("triple", 3.0)):
            status, answer = server.rest(
                f"/v1/models/{name}:predict", {"instances": [1.5]}
            )
            assert status == 200, answer
            assert answer == {"predictions": [1.5 * factor]}
            assert f"Serving model {name} from base path" in server.output()
        assert "No versions" not in server.output()
