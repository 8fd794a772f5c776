"""TF Serving's config files: batching parameters, monitoring, model list:
the text protos of `tensorflow_model_server`'s `--batching_parameters_file`,
`--monitoring_config_file` and `--model_config_file`, parsed by
`google.protobuf.text_format` with the official protos, or for the two
messages not in `tensorflow-serving-api` with descriptors built here from
TF Serving's. Fields of TF Serving's we do not implement (`thread_pool_name`,
`enable_large_batch_splitting`, `max_execution_batch_size`, a model's
`logging_config`) are accepted with an `UnsupportedFieldWarning`; others,
bad values and broken rules are `ValueError`s: `path:line: field: msg`.
"""

import dataclasses
import functools
import os
import re
import types
import warnings

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory
from google.protobuf import text_format
from google.protobuf import wrappers_pb2
from tensorflow_serving.config import model_server_config_pb2 as pb2

DEFAULT_PROMETHEUS_PATH = "/monitoring/prometheus/metrics"
TENSORFLOW_PLATFORM = "tensorflow"

# TF Serving's BatchingParameters (session_bundle_config.proto) as
# (field, type); a leading "." names a message type.
_INT64_VALUE = ".google.protobuf.Int64Value"
_BATCHING_FIELDS = (
    ("max_batch_size", _INT64_VALUE),
    ("batch_timeout_micros", _INT64_VALUE),
    ("max_enqueued_batches", _INT64_VALUE),
    ("num_batch_threads", _INT64_VALUE),
    ("allowed_batch_sizes", "repeated int64"),
    ("pad_variable_length_inputs", "bool"),
    ("thread_pool_name", ".google.protobuf.StringValue"),
    ("enable_large_batch_splitting", ".google.protobuf.BoolValue"),
    ("max_execution_batch_size", _INT64_VALUE),
)
_IGNORED_BATCHING_FIELDS = {
    "thread_pool_name": "batches run on the server's own threads",
    "enable_large_batch_splitting": "requests are never split",
    "max_execution_batch_size": "batches are never split",
}
_MESSAGES = {
    "BatchingParameters": _BATCHING_FIELDS,
    "PrometheusConfig": (("enable", "bool"), ("path", "string")),
    "MonitoringConfig": (
        ("prometheus_config", ".tensorflow.serving.PrometheusConfig"),
    ),
}
_SCALAR_TYPES = {"bool": 8, "int64": 3, "string": 9}  # FieldDescriptorProto
_POLICY_LENGTHS = {"latest": 2, "all": 1, "specific": 2}
_URI_SCHEME = re.compile(r"[A-Za-z][0-9A-Za-z.]*://")  # TF's io::ParseURI


class UnsupportedFieldWarning(UserWarning):
    """A TF Serving config field that is read but has no effect here."""


class _FieldError(ValueError):
    """A value that breaks a rule, with the name of its field."""

    def __init__(self, field, message):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _schedulable_cpus():
    """TF's `port::MaxParallelism()`: the CPUs this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def _check_int(field, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise _FieldError(field, f"must be an integer. Received: {value!r}")
    if value < minimum:
        bound = "positive" if minimum == 1 else "non-negative"
        raise _FieldError(field, f"must be {bound}. Received: {value}")


@dataclasses.dataclass(frozen=True)
class BatchingParameters:
    """How requests are grouped into batches (`--batching_parameters_file`).

    The defaults are TF Serving's for a field the file leaves out: those of
    `SharedBatchScheduler::QueueOptions` and `::Options` in TensorFlow's
    `core/kernels/batching_util/shared_batch_scheduler.h`.

    Args:
        max_batch_size: int, the largest batch. Defaults to `1000`.
        batch_timeout_micros: int, how long the first request of a batch
            waits for others before the batch runs anyway. Defaults to `0`.
        max_enqueued_batches: int, how many batches may wait; past them a
            request fails as `UNAVAILABLE`. Defaults to `10`.
        num_batch_threads: int, how many batches run at once. Defaults to
            the number of CPUs this process may use.
        allowed_batch_sizes: tuple of int, increasing, the last equal to
            `max_batch_size`; a batch is padded up to the next one. Empty
            (the default) allows every size.
        pad_variable_length_inputs: bool, merge requests whose inputs
            differ after the batch axis, padding each to the batch's
            largest with its first element, as TF Serving does
            (`batching.pad_to_shape`). Defaults to `False`: such requests
            run in separate batches.
    """

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = dataclasses.field(
        default_factory=_schedulable_cpus
    )
    allowed_batch_sizes: tuple = ()
    pad_variable_length_inputs: bool = False

    def __post_init__(self):
        _check_int("max_batch_size", self.max_batch_size)
        _check_int("batch_timeout_micros", self.batch_timeout_micros, 0)
        _check_int("max_enqueued_batches", self.max_enqueued_batches)
        _check_int("num_batch_threads", self.num_batch_threads)
        sizes = tuple(self.allowed_batch_sizes)
        object.__setattr__(self, "allowed_batch_sizes", sizes)
        for size in sizes:
            _check_int("allowed_batch_sizes", size)
        if any(b <= a for a, b in zip(sizes, sizes[1:])):
            message = f"must be increasing. Received: {list(sizes)}"
            raise _FieldError("allowed_batch_sizes", message)
        if sizes and sizes[-1] != self.max_batch_size:  # TF Serving's rule.
            message = (
                f"must end with max_batch_size, {self.max_batch_size}. "
                f"Received: {list(sizes)}"
            )
            raise _FieldError("allowed_batch_sizes", message)


@dataclasses.dataclass(frozen=True)
class MonitoringConfig:
    """What `--monitoring_config_file` turns on.

    Args:
        prometheus_enabled: bool, serve the Prometheus metrics page on the
            REST port. Defaults to `False`.
        prometheus_path: str, the page's URL path. Defaults to TF
            Serving's `"/monitoring/prometheus/metrics"`.
    """

    prometheus_enabled: bool = False
    prometheus_path: str = DEFAULT_PROMETHEUS_PATH

    def __post_init__(self):
        path = self.prometheus_path
        if not isinstance(path, str) or not path.startswith("/"):
            message = f"must start with '/'. Received: {path!r}"
            raise _FieldError("prometheus_path", message)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One model to serve: a `config` entry of `--model_config_file`.

    Args:
        name: str, the name requests use (`/v1/models/<name>`).
        base_path: str, the folder of numbered version folders: an absolute
            path or a URI (`gs://...`). TF Serving refuses relative paths
            (`ServerCore`'s `ValidateModelConfigList`), and so do we.
        version_policy: tuple, the versions to serve: `("latest", n)`, the
            `n` highest (TF Serving's default, `n=1`); `("all",)`; or
            `("specific", versions)` with a tuple of version numbers.
        version_labels: dict of str to int, names such as `"stable"` for
            versions (`/v1/models/<name>/labels/stable`).
    """

    name: str
    base_path: str
    version_policy: tuple = ("latest", 1)
    version_labels: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for field in ("name", "base_path"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value:
                raise _FieldError(field, f"is required. Received: {value!r}")
        path = self.base_path
        if not path.startswith("/") and not _URI_SCHEME.match(path):
            message = f"must be absolute or a URI, as in TF Serving: {path!r}"
            raise _FieldError("base_path", message)
        policy = tuple(self.version_policy)
        if not policy or _POLICY_LENGTHS.get(policy[0]) != len(policy):
            raise _FieldError(
                "version_policy",
                "must be ('latest', n), ('all',) or ('specific', versions). "
                f"Received: {self.version_policy!r}",
            )
        if policy[0] == "latest":
            _check_int("version_policy", policy[1])
        elif policy[0] == "specific":
            policy = ("specific", tuple(sorted(set(policy[1]))))
            if not policy[1]:
                raise _FieldError("version_policy", "lists no versions")
            for version in policy[1]:
                _check_int("version_policy", version, 0)
        object.__setattr__(self, "version_policy", policy)
        object.__setattr__(self, "version_labels", dict(self.version_labels))


def read_batching_parameters(path):
    """Reads TF Serving's `--batching_parameters_file`.

    Args:
        path: str or path-like, a text-format `BatchingParameters`, e.g.
            `max_batch_size { value: 128 }  allowed_batch_sizes: [8, 128]`.

    Returns:
        A `BatchingParameters`; fields left out take TF Serving's defaults.

    Raises:
        ValueError: naming file, line and field of a syntax error, an
            unknown field or a bad value.
    """
    message = _message_class("BatchingParameters")()
    root = _load(path, message)
    values = {
        "allowed_batch_sizes": tuple(message.allowed_batch_sizes),
        "pad_variable_length_inputs": message.pad_variable_length_inputs,
    }
    for name, _ in _BATCHING_FIELDS[:4]:  # The Int64Value fields we use.
        if message.HasField(name):
            values[name] = getattr(message, name).value
    given = {field.name for field, _ in message.ListFields()}
    for name, effect in _IGNORED_BATCHING_FIELDS.items():
        if name in given:
            _warn_ignored(path, _line(root, name), name, effect)
    try:
        return BatchingParameters(**values)
    except _FieldError as error:
        line = _line(root, error.field)
        raise _file_error(path, line, error.field, error.message) from None


def read_monitoring_config(path):
    """Reads TF Serving's `--monitoring_config_file`.

    Args:
        path: str or path-like, a text-format `MonitoringConfig`, e.g.
            `prometheus_config { enable: true, path: "/metrics" }`.

    Returns:
        A `MonitoringConfig`; an empty or absent `path` means the default.

    Raises:
        ValueError: naming file, line and field of a syntax error, an
            unknown field or a bad value.
    """
    message = _message_class("MonitoringConfig")()
    root = _load(path, message)
    prometheus = message.prometheus_config
    try:
        return MonitoringConfig(
            prometheus_enabled=prometheus.enable,
            prometheus_path=prometheus.path or DEFAULT_PROMETHEUS_PATH,
        )
    except _FieldError as error:
        line = _line(root, "prometheus_config", "path")
        field = "prometheus_config.path"
        raise _file_error(path, line, field, error.message) from None


def read_model_config_file(path):
    """Reads TF Serving's `--model_config_file`, a `ModelServerConfig`.

    Only `model_config_list` is supported, of models on platform
    `"tensorflow"` (or none given), each listed once:

    ```
    model_config_list { config {
      name: "translation"  base_path: "/models/translation-spa-eng"
      model_version_policy { specific { versions: 1 versions: 2 } }
      version_labels { key: "stable" value: 1 }
    } }
    ```

    Args:
        path: str or path-like, the config file.

    Returns:
        A tuple of `ModelConfig` in file order; empty for an empty file
        (TF Serving then serves nothing until the config changes).

    Raises:
        ValueError: naming file, line and field of a syntax error, an
            unknown field, a bad value, a `custom_model_config`, another
            platform or a name listed twice.
    """
    config = pb2.ModelServerConfig()
    root = _load(path, config)
    if config.HasField("custom_model_config"):
        line = _line(root, "custom_model_config")
        message = "is not supported; list models under model_config_list"
        raise _file_error(path, line, "custom_model_config", message)
    entries = getattr(_child(root, "model_config_list"), "children", [])
    entries = [n for n in entries if n.name == "config" and not n.list_head]
    models, first_lines = [], {}
    for index, proto in enumerate(config.model_config_list.config):
        node = entries[index] if index < len(entries) else None
        model = _model_config(path, proto, node)
        line = _line(node, "name")
        if model.name in first_lines:
            first = first_lines[model.name]
            message = f"{model.name!r} is listed twice (first on line {first})"
            raise _file_error(path, line, "name", message)
        first_lines[model.name] = line
        models.append(model)
    return tuple(models)


def _model_config(path, proto, node):
    """The `ModelConfig` of one `config` entry; errors name its lines."""

    def fail(field, message):
        message = f"model {proto.name!r}: {message}"
        return _file_error(path, _line(node, field), field, message)

    if proto.model_type != pb2.MODEL_TYPE_UNSPECIFIED:  # Deprecated.
        if proto.model_platform:
            raise fail("model_type", "give model_platform or model_type")
        if proto.model_type != pb2.TENSORFLOW:
            type_name = pb2.ModelType.Name(proto.model_type)
            raise fail("model_type", f"{type_name} is not supported")
    elif proto.model_platform not in ("", TENSORFLOW_PLATFORM):
        received = f"Received: {proto.model_platform!r}"
        message = f"must be {TENSORFLOW_PLATFORM!r} or left out. {received}"
        raise fail("model_platform", message)
    if proto.HasField("logging_config"):
        line = _line(node, "logging_config")
        effect = f"requests to {proto.name!r} are not logged"
        _warn_ignored(path, line, "logging_config", effect)
    policy = proto.model_version_policy
    choice = policy.WhichOneof("policy_choice")
    if choice == "all":
        version_policy = ("all",)
    elif choice == "specific":
        version_policy = ("specific", tuple(policy.specific.versions))
    else:  # TF Serving's default; `num_versions: 0` also means 1.
        version_policy = ("latest", max(policy.latest.num_versions, 1))
    try:
        return ModelConfig(
            name=proto.name,
            base_path=proto.base_path,
            version_policy=version_policy,
            version_labels=dict(proto.version_labels),
        )
    except _FieldError as error:
        field = error.field.replace("version_policy", "model_version_policy")
        raise fail(field, error.message) from None


@functools.cache
def _message_class(name):
    """A message class of `_MESSAGES`, from a private descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    wrappers = descriptor_pb2.FileDescriptorProto()
    wrappers_pb2.DESCRIPTOR.CopyToProto(wrappers)
    pool.Add(wrappers)
    file = descriptor_pb2.FileDescriptorProto(
        name="attention_zoo/serving/tf_serving_config_files.proto",
        package="tensorflow.serving",
        syntax="proto3",
        dependency=[wrappers.name],
    )
    for message_name, fields in _MESSAGES.items():
        message = file.message_type.add(name=message_name)
        for number, (field_name, kind) in enumerate(fields, start=1):
            field = message.field.add(name=field_name, number=number)
            field.label = field.LABEL_OPTIONAL
            if kind.startswith("repeated "):
                field.label, kind = field.LABEL_REPEATED, kind.split()[1]
            if kind.startswith("."):
                field.type, field.type_name = field.TYPE_MESSAGE, kind
            else:
                field.type = _SCALAR_TYPES[kind]
    pool.Add(file)
    descriptor = pool.FindMessageTypeByName(f"tensorflow.serving.{name}")
    return message_factory.GetMessageClass(descriptor)


def _load(path, message):
    """Parses `path` into `message`; returns the fields' positions."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise _file_error(path, line, None, f"not UTF-8: {error}") from None
    root, nodes = _scan(text)
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        line, column = error.GetLine(), error.GetColumn()
        detail, field = re.sub(r"^\d+:\d+ : ", "", str(error)), None
        if line is not None:  # Name the last field starting before it.
            detail = f"column {column}: {detail}"
            before = [n for n in nodes if (n.line, n.column) <= (line, column)]
            field = before[-1].path if before else None
        raise _file_error(path, line, field, detail) from None
    return root


def _file_error(path, line, field, message):
    """A `ValueError` reading `path:line: field: message`."""
    where = f"{os.fspath(path)}:{line}" if line else os.fspath(path)
    return ValueError(
        ": ".join(part for part in (where, field, message) if part)
    )


def _warn_ignored(path, line, field, effect):
    message = f"is accepted for TF Serving compatibility but unused: {effect}"
    warning = str(_file_error(path, line, field, message))
    warnings.warn(warning, UnsupportedFieldWarning, stacklevel=3)


# `text_format` keeps no positions: this lenient scanner finds the lines.
_TOKEN = re.compile(
    r"""(?P<skip>\s+|\#[^\n]*)
      | (?P<string>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)
      | (?P<word>[\w.+-]+)
      | (?P<mark>\S)""",
    re.VERBOSE,
)


def _node(name, line, column, parent):
    """One field occurrence. A `list_head` (`name [{...}, ...]`) is
    followed by a node for each entry."""
    node = types.SimpleNamespace(name=name, line=line, column=column)
    node.parent, node.children, node.list_head = parent, [], False
    node.path = f"{parent.path}.{name}" if parent and parent.path else name
    return node


def _scan(text):
    """The field occurrences of a text proto: `(root, nodes in order)`."""
    root = _node("", None, None, None)
    nodes, stack = [], [(root, "message")]
    last = root  # The last field name seen.
    previous, line, line_start = "{", 1, 0
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind == "skip":
            if "\n" in token:
                line += token.count("\n")
                line_start = match.start() + token.rindex("\n") + 1
            continue
        column = match.start() - line_start + 1
        parent, context = stack[-1]
        mark = token if kind == "mark" else None
        is_name = kind == "word" and context == "message"
        if is_name and previous not in (":", "-"):
            last = _node(token, line, column, parent)
            parent.children.append(last)
            nodes.append(last)
        elif mark in ("{", "<") and context == "list":  # A list entry.
            parent.list_head = True
            owner = parent.parent or root
            entry = _node(parent.name, line, column, owner)
            owner.children.append(entry)
            nodes.append(entry)
            stack.append((entry, "message"))
        elif mark in ("{", "<", "["):
            stack.append((last, "list" if mark == "[" else "message"))
        elif mark in ("}", ">", "]") and len(stack) > 1:
            stack.pop()
        previous = mark or ("-" if token == "-" else "value")
    return root, nodes


def _child(node, name):
    """The first field `name` directly inside `node`, or `None`."""
    children = node.children if node is not None else ()
    return next((c for c in children if c.name == name), None)


def _line(node, *names):
    """The line of field `names` under `node`, or of its deepest parent."""
    line = node.line if node is not None else None
    for name in names:
        node = _child(node, name)
        if node is None:
            break
        line = node.line
    return line
