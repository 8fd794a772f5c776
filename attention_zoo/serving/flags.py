"""`tensorflow_model_server`'s flags, spelled as it spells them.

A TF Serving command line works with `attention-zoo serve` in its place:
both `--flag=value` and `--flag value`, booleans as `--enable_batching`
or `--enable_batching=true`; each flag also answers to its dashed
spelling (`--model-base-path`). Flags of our own: `--host` (TF Serving
binds every address; here 127.0.0.1 unless asked), `--max_request_bytes`
and `--max_request_examples` (the limits past which a request is
refused with a 4xx naming them), `--max_request_bytes_in_flight` (the
request bytes worked on at once, `admission.RequestBudget`).

The MODEL shortcut also takes a folder of model folders (a model
repository, such as `saved_models/`): when the folder holds no numbered
versions but subfolders that do, each subfolder is served as a model of
its name. `--model_base_path` is always one model, as in TF Serving.

`parse(argv)` returns the `Options` the server runs with; the config
files it names are read here, so a bad file stops the server before it
starts, with the file and line.
"""

import argparse
import dataclasses
import os

from attention_zoo.serving import config_files
from attention_zoo.serving import models as served_models

DEFAULT_MODEL_NAME = "default"  # TF Serving's, for --model_base_path alone


@dataclasses.dataclass(frozen=True)
class Options:
    """What the server runs with (see `parser()` for each)."""

    models: tuple
    host: str
    port: int
    rest_api_port: int
    poll_seconds: float
    batching: object  # BatchingParameters, or None
    rest_api_timeout_ms: int
    metrics_path: object  # str, or None
    max_request_bytes: int
    max_request_examples: int
    threads: int
    max_request_bytes_in_flight: int


def _bool(text):
    value = str(text).lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _add(parser, name, **kwargs):
    """A flag under TF Serving's name and its dashed spelling."""
    spellings = [f"--{name}"]
    if "_" in name:
        spellings.append(f"--{name.replace('_', '-')}")
    parser.add_argument(*spellings, dest=name, **kwargs)


def parser(prog="attention-zoo serve"):
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve SavedModels with TF Serving's REST and gRPC APIs "
        "(tensorflow_model_server's flags).",
    )
    parser.add_argument(
        "model",
        nargs="?",
        help="shortcut: a folder of numbered versions, or a shipped "
        "model's name (`attention-zoo models`); its name is the model's. "
        "A folder of such folders (saved_models) serves each by its name",
    )
    _add(
        parser,
        "model_name",
        help="the model's name (default: 'default', or the shortcut's name)",
    )
    _add(parser, "model_base_path", help="a folder of numbered versions")
    _add(
        parser,
        "model_config_file",
        help="a ModelServerConfig text proto listing several models",
    )
    _add(
        parser,
        "port",
        type=int,
        default=8500,
        help="gRPC port (default 8500; 0 picks a free one)",
    )
    _add(
        parser,
        "rest_api_port",
        type=int,
        default=8501,
        help="REST port (default 8501; 0 turns REST off, as in TF Serving)",
    )
    _add(
        parser,
        "host",
        default="127.0.0.1",
        help="the address to bind (default 127.0.0.1; 0.0.0.0 for all)",
    )
    _add(
        parser,
        "file_system_poll_wait_seconds",
        type=float,
        default=1,
        help="seconds between polls of the base paths for new versions "
        "(default 1; 0 polls once at start)",
    )
    _add(
        parser,
        "enable_batching",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        help="merge concurrent requests into batches",
    )
    _add(
        parser,
        "batching_parameters_file",
        help="BatchingParameters text "
        "proto (max_batch_size, batch_timeout_micros, "
        "max_enqueued_batches, num_batch_threads)",
    )
    _add(
        parser,
        "rest_api_timeout_in_ms",
        type=int,
        default=30000,
        help="REST requests running longer are answered 504 (default 30000)",
    )
    _add(
        parser,
        "monitoring_config_file",
        help="MonitoringConfig text "
        "proto; `prometheus_config { enable: true }` serves the metrics",
    )
    _add(
        parser,
        "rest_api_num_threads",
        type=int,
        default=32,
        help="threads that run REST requests (default 32)",
    )
    _add(
        parser,
        "max_request_bytes",
        type=int,
        default=32 << 20,
        help="larger request bodies are refused (default 32 MiB)",
    )
    _add(
        parser,
        "max_request_bytes_in_flight",
        type=int,
        help="the request bytes worked on at once (a request costs the "
        "server tens of times its size); past them requests wait, and are "
        "refused (429, RESOURCE_EXHAUSTED) when as many bytes wait "
        "(default: twice --max_request_bytes)",
    )
    _add(
        parser,
        "max_request_examples",
        type=int,
        default=1024,
        help="without batching, requests with more examples are refused "
        "(default 1024; with batching: max_batch_size)",
    )
    return parser


def parse(argv, resolve=None, prog="attention-zoo serve"):
    """The `Options` of a command line.

    Args:
        argv: list of str, the flags.
        resolve: optional callable, the positional shortcut -> the folder
            of numbered versions (a shipped model's name to its folder);
            by default the shortcut is a folder.

    Raises:
        SystemExit: (argparse's usage error, exit 2) a bad flag, no model
            or two ways of naming one, a config file that does not read.
    """
    arguments = parser(prog).parse_args(_bare_booleans(list(argv)))
    fail = parser(prog).error
    try:
        return _options(arguments, resolve)
    except (ValueError, OSError) as error:
        fail(str(error))


def _bare_booleans(argv):
    """`--enable_batching MODEL` as `--enable_batching=true MODEL`: a
    bare boolean flag never takes the next word unless it is a boolean."""
    flags = {"--enable_batching", "--enable-batching"}
    for index, word in enumerate(argv):
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if word in flags:
            try:
                _bool(following)
            except argparse.ArgumentTypeError:
                argv[index] = f"{word}=true"
    return argv


def _options(arguments, resolve):
    named = [
        flag
        for flag, value in [
            ("MODEL", arguments.model),
            ("--model_base_path", arguments.model_base_path),
            ("--model_config_file", arguments.model_config_file),
        ]
        if value
    ]
    if len(named) != 1:
        raise ValueError(
            "name the models one way: a MODEL shortcut, --model_base_path "
            "or --model_config_file"
            + (f" (got {', '.join(named)})" if named else "")
        )
    if arguments.model_config_file:
        models = tuple(
            config_files.read_model_config_file(arguments.model_config_file)
        )
    else:
        repository = ()
        if arguments.model:
            base_path = (resolve or (lambda name: name))(arguments.model)
            default_name = os.path.basename(os.path.normpath(base_path))
            repository = served_models.model_folders(base_path)
        else:
            base_path = arguments.model_base_path
            default_name = DEFAULT_MODEL_NAME
        if repository and arguments.model_name:
            raise ValueError(
                f"--model_name names one model, but {base_path} is a folder "
                f"of models ({', '.join(repository)}), each served by its "
                "name: leave --model_name out"
            )
        models = tuple(
            config_files.ModelConfig(
                name=name,
                base_path=os.path.abspath(path),
                version_policy=("latest", 1),
                version_labels={},
            )
            for name, path in (
                [(name, os.path.join(base_path, name)) for name in repository]
                or [(arguments.model_name or default_name, base_path)]
            )
        )
    for model in models:
        if os.path.exists(os.path.join(model.base_path, "saved_model.pb")):
            raise ValueError(
                f"{model.base_path} is one version folder (it holds "
                "saved_model.pb): give its parent, the folder of numbered "
                "versions"
            )
    batching = None
    if arguments.enable_batching:
        batching = (
            config_files.read_batching_parameters(
                arguments.batching_parameters_file
            )
            if arguments.batching_parameters_file
            else config_files.BatchingParameters()
        )
    elif arguments.batching_parameters_file:
        raise ValueError("--batching_parameters_file needs --enable_batching")
    metrics_path = None
    if arguments.monitoring_config_file:
        monitoring = config_files.read_monitoring_config(
            arguments.monitoring_config_file
        )
        if monitoring.prometheus_enabled:
            metrics_path = monitoring.prometheus_path
    in_flight = arguments.max_request_bytes_in_flight
    if in_flight is None:
        in_flight = 2 * arguments.max_request_bytes
    for flag in (
        "max_request_bytes",
        "max_request_examples",
        "rest_api_timeout_in_ms",
        "rest_api_num_threads",
        "max_request_bytes_in_flight",
    ):
        value = getattr(arguments, flag)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag} must be positive, not {value}")
    if in_flight < arguments.max_request_bytes:
        raise ValueError(
            f"--max_request_bytes_in_flight={in_flight} must be at least "
            f"--max_request_bytes={arguments.max_request_bytes} (else a "
            "request of that size could never run)"
        )
    if arguments.file_system_poll_wait_seconds < 0:
        raise ValueError(
            "--file_system_poll_wait_seconds must be 0 (poll once) or more"
        )
    return Options(
        models=models,
        host=arguments.host,
        port=arguments.port,
        rest_api_port=arguments.rest_api_port,
        poll_seconds=arguments.file_system_poll_wait_seconds,
        batching=batching,
        rest_api_timeout_ms=arguments.rest_api_timeout_in_ms,
        metrics_path=metrics_path,
        max_request_bytes=arguments.max_request_bytes,
        max_request_examples=arguments.max_request_examples,
        threads=arguments.rest_api_num_threads,
        max_request_bytes_in_flight=in_flight,
    )
