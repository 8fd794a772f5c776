"""`ModelServer`: the models served, what both APIs ask of them.

It holds one `ServedModel` per configured model, polls their base paths
on a thread (`file_system_poll_wait_seconds`), loads versions as
`Servable`s (batching as configured, warm-up requests replayed before a
version is `AVAILABLE`) and answers the three questions the REST and gRPC
APIs ask: `predict`, `status` and `metadata`, as TF Serving's protos
(`tensorflow_serving.apis`). It also keeps the metrics.
"""

import logging
import os
import threading

from attention_zoo.export.warmup import read_warmup_requests
from attention_zoo.serving.metrics import ServingMetrics
from attention_zoo.serving.models import ServedModel
from attention_zoo.serving.models import model_folders
from attention_zoo.serving.servable import Servable
from attention_zoo.serving.status import CODE_NUMBERS
from attention_zoo.serving.status import ServingError

logger = logging.getLogger("attention_zoo.serving")
DEFAULT_SIGNATURE = "serving_default"


class ModelServer:
    """The served models (see the module docstring).

    Args:
        models: list of `ModelConfig`.
        batching: optional `BatchingParameters` (`--enable_batching`).
        max_request_examples: int, the most examples in one request
            without batching (with batching, `max_batch_size`).
        poll_seconds: float, the pause between polls of the base paths;
            0 polls once, at `start`.
    """

    def __init__(
        self, models, batching=None, max_request_examples=1024, poll_seconds=1
    ):
        self.metrics = ServingMetrics()
        self._batching = batching
        self._max_examples = max_request_examples
        self._poll_seconds = poll_seconds
        self.models = {
            config.name: ServedModel(config, self._load) for config in models
        }
        self._stopping = threading.Event()
        self._poller = None

    def start(self):
        """Loads the versions there are now, then polls on a thread."""
        for model in self.models.values():
            logger.info(
                "Serving model %s from base path %s",
                model.name,
                model.base_path,
            )
        self.poll()
        for model in self.models.values():
            try:
                model.statuses()
            except ServingError:
                logger.warning(
                    "No versions of model %s found under base path %s%s",
                    model.name,
                    model.base_path,
                    _repository_hint(model.base_path),
                )
        if self._poll_seconds > 0:
            self._poller = threading.Thread(
                target=self._poll_loop, name="poll base paths", daemon=True
            )
            self._poller.start()

    def poll(self):
        for model in self.models.values():
            model.poll()

    def _poll_loop(self):
        while not self._stopping.wait(self._poll_seconds):
            try:
                self.poll()
            except Exception:  # a poll must never end the polling
                logger.exception("Polling the base paths failed")

    def stop(self):
        """Stops polling and unloads every model (queued batches run)."""
        self._stopping.set()
        if self._poller is not None:
            self._poller.join()
        for model in self.models.values():
            model.close()

    def _load(self, name, version, path):
        servable = Servable(
            name,
            version,
            path,
            batching=self._batching,
            max_request_examples=self._max_examples,
            on_batch=lambda signature, size: self.metrics.record_batch(
                name, signature, size
            ),
        )
        requests = read_warmup_requests(path)
        for signature, inputs in requests:
            servable.predict(signature, inputs)
        if requests:
            logger.info(
                "%s version %d: %d warm-up requests replayed",
                name,
                version,
                len(requests),
            )
        return servable

    def model(self, name):
        if name not in self.models:
            raise ServingError(
                "NOT_FOUND",
                f"Servable not found for request: Latest({name})",
            )
        return self.models[name]

    def servable(self, name, version=None, label=None):
        return self.model(name).get(version, label)

    def predict(self, name, version, label, signature, arrays, output_filter):
        """`(servable, outputs)`: a request run on the version it names."""
        servable = self.servable(name, version, label)
        return servable, servable.predict(signature, arrays, output_filter)

    def status(self, name, version=None):
        """TF Serving's `GetModelStatusResponse` of a model (or version)."""
        # lazy: `attention-zoo serve --help` imports no TF Serving protos
        # (they import TensorFlow)
        from tensorflow_serving.apis import get_model_status_pb2

        response = get_model_status_pb2.GetModelStatusResponse()
        states = get_model_status_pb2.ModelVersionStatus.State
        for status in self.model(name).statuses(version):
            entry = response.model_version_status.add()
            entry.version = status.version
            entry.state = states.Value(status.state)
            entry.status.error_code = CODE_NUMBERS[status.error_code]
            entry.status.error_message = status.error_message
        return response

    def metadata(self, name, version=None, label=None):
        """TF Serving's `GetModelMetadataResponse` (the signature defs)."""
        # lazy: as in `status`
        from tensorflow_serving.apis import get_model_metadata_pb2

        servable = self.servable(name, version, label)
        response = get_model_metadata_pb2.GetModelMetadataResponse()
        response.model_spec.name = name
        response.model_spec.version.value = servable.version
        response.metadata["signature_def"].Pack(servable.signature_defs)
        return response


def _repository_hint(base_path):
    """What to run when a base path is a folder of models: TF Serving's
    `--model_base_path` is one model, so it is served as one (its
    versions may still appear)."""
    names = model_folders(base_path)
    if not names:
        return ""
    entries = " ".join(
        f'config {{ name: "{name}" base_path: '
        f'"{os.path.join(base_path, name)}" model_platform: "tensorflow" }}'
        for name in names
    )
    return (
        f", but it holds the models {', '.join(names)}: serve them with "
        f"`attention-zoo serve {base_path}`, or with --model_config_file "
        f"naming a file of: model_config_list {{ {entries} }}"
    )
