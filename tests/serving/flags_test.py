"""`attention_zoo.serving.flags`: TF Serving's command lines."""

import os

import pytest

from attention_zoo.serving import flags


@pytest.fixture
def base(tmp_path):
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "saved_model.pb").write_bytes(b"")
    return tmp_path / "m"


def test_tf_serving_command_line_both_spellings(base, tmp_path):
    batching = tmp_path / "batching.txt"
    batching.write_text("max_batch_size { value: 64 }\n")
    options = flags.parse(
        [
            "--model_name=m",
            "--model_base_path",
            str(base),
            "--port=9000",
            "--rest_api_port",
            "9001",
            "--enable_batching",
            f"--batching_parameters_file={batching}",
            "--file_system_poll_wait_seconds=5",
            "--rest_api_timeout_in_ms=1500",
        ]
    )
    (model,) = options.models
    assert (model.name, model.base_path) == ("m", str(base))
    assert (options.port, options.rest_api_port) == (9000, 9001)
    assert options.batching.max_batch_size == 64
    assert options.poll_seconds == 5
    assert options.rest_api_timeout_ms == 1500
    assert options.host == "127.0.0.1"
    assert options.metrics_path is None


def test_defaults_and_dashed_spellings(base):
    options = flags.parse(["--model-base-path", str(base)])
    assert options.models[0].name == "default"  # TF Serving's
    assert (options.port, options.rest_api_port) == (8500, 8501)
    assert options.batching is None
    assert (
        flags.parse(
            ["--model_base_path", str(base), "--enable_batching=false"]
        ).batching
        is None
    )


def test_a_bare_boolean_before_the_shortcut(base):
    options = flags.parse(["--enable_batching", str(base)])
    assert options.batching is not None
    assert options.models[0].name == "m"
    assert options.models[0].base_path == os.path.abspath(base)


def test_the_shortcut_goes_through_resolve(base):
    options = flags.parse(["shipped-name"], resolve=lambda name: str(base))
    assert options.models[0].base_path == str(base)
    assert options.models[0].name == "m"


def test_monitoring_config_turns_the_metrics_page_on(base, tmp_path):
    config = tmp_path / "monitoring.txt"
    config.write_text("prometheus_config { enable: true }\n")
    options = flags.parse(
        ["--model_base_path", str(base), f"--monitoring_config_file={config}"]
    )
    assert options.metrics_path == "/monitoring/prometheus/metrics"


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "name the models one way"),
        (["a", "--model_base_path=b"], "name the models one way"),
        (["--model_base_path={base}/1"], "one version folder"),
        (
            ["--model_base_path={base}", "--batching_parameters_file=x"],
            "needs --enable_batching",
        ),
        (
            ["--model_base_path={base}", "--max_request_bytes=0"],
            "must be positive",
        ),
        (
            [
                "--model_base_path={base}",
                "--enable_batching",
                "--batching_parameters_file={base}/none.txt",
            ],
            "none.txt",
        ),
    ],
)
def test_bad_command_lines_are_usage_errors(base, argv, message, capsys):
    argv = [word.format(base=base) for word in argv]
    with pytest.raises(SystemExit) as exited:
        flags.parse(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_attention_zoo_serve_help_lists_tf_servings_flags(capsys):
    from attention_zoo_apps import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for flag in (
        "--model_base_path",
        "--model_config_file",
        "--port",
        "--rest_api_port",
        "--enable_batching",
        "--batching_parameters_file",
        "--monitoring_config_file",
    ):
        assert flag in text
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "serve" in capsys.readouterr().out


def test_an_unknown_shipped_name_is_a_usage_error(capsys):
    from attention_zoo_apps import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "no-such-model"])
    assert exited.value.code == 2
    assert "shipped models:" in capsys.readouterr().err
