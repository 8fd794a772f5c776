"""`attention-zoo serve`'s faults under load: requests sent, failed, wrong.

Run from the repository root (the figures of the site's serving page):

    python -m benchmarks.serving_faults
    python -m benchmarks.serving_faults --protocols grpc --batching off \\
        --seconds 1

The models are tiny SavedModels `y = factor * x` with version N's factor
N, so every answer says which version gave it. Each request carries 3
numbers drawn for it, so an answer with another request's rows is caught
too. `--clients` threads (each with its own keep-alive HTTP connection or
gRPC channel and `PredictionServiceStub`) send back to back, pausing 50 ms
after a failure; every answer is recorded. For each protocol and batching
setting, three scenarios:

- kill: SIGKILL of the server after `--seconds` under load, `--down`
  seconds without a server, then a new server on the same ports. Failed
  requests are expected (connection refused or reset, gRPC UNAVAILABLE);
  wrong answers must be 0. "answered after" is from the SIGKILL to the
  first answer of the new server, "(start)" the part of it after
  `ServerProcess` saw the new server's start-up lines (it polls every
  0.2 s, so 0 or below means at once), "(all)" until every client had
  been answered again.
- new version: version 2 written under load as `export` writes it
  (`attention_zoo.export.atomic_directory`: a hidden folder renamed into
  place), the server polling every `--poll` seconds. Failed and wrong
  must be 0 (an answer of version 1 after the same client was answered by
  version 2 counts as wrong). "answered after" is from the rename to the
  first answer of version 2, "(all)" until every client had one.
- corrupt version: a folder `2` whose `saved_model.pb` is not a
  SavedModel, renamed into place under load. Failed and wrong must be 0
  and every answer comes from version 1; "answered after" is from the
  rename to the server's status of version 2 reading END with its error.

With batching on, the parameters are those of `serving_load.py`'s
defaults: `max_batch_size` 32, `batch_timeout_micros` 0,
`num_batch_threads` 2, `max_enqueued_batches` 100.

A wrong answer is a `y` other than `factor * x` for a known version, or
(gRPC) a version in the answer other than the one the factor names.
Every wait is bounded; only 127.0.0.1 is used.
"""

import json
import os
import random
import shutil
import tempfile
import threading
import time

# The serving benchmarks' backend, set before the harness imports Keras.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import grpc  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_serving.apis import predict_pb2  # noqa: E402
from tensorflow_serving.apis import prediction_service_pb2_grpc  # noqa: E402

from attention_zoo.export import atomic_directory  # noqa: E402
from attention_zoo.serving.process import ServerProcess  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import rest_client  # noqa: E402

MODEL = "scale"
SCENARIOS = ("kill", "new version", "corrupt version")
REQUEST_TIMEOUT = 10  # seconds
MAX_REQUESTS = 100_000  # per client and scenario
MAX_SECONDS = 240  # per scenario's load
FAILURE_PAUSE = 0.05


def save_scaling_model(path, factor):
    """A SavedModel `serving_default(x: float32 [None]) -> {"y": factor *
    x}`, written atomically (as `export` writes versions)."""

    class Scaling(tf.Module):
        @tf.function(
            input_signature=[tf.TensorSpec([None], tf.float32, name="x")]
        )
        def serve(self, x):
            return {"y": x * factor}

    module = Scaling()
    with atomic_directory(path) as temporary:
        tf.saved_model.save(
            module, temporary, signatures={"serving_default": module.serve}
        )
    return path


def write_corrupt_version(path):
    """A version folder that does not load, renamed into place at once."""
    hidden = os.path.join(
        os.path.dirname(path), f".{os.path.basename(path)}.partial"
    )
    os.makedirs(hidden)
    with open(os.path.join(hidden, "saved_model.pb"), "wb") as file:
        file.write(b"not a SavedModel")
    os.rename(hidden, path)


class Answer:
    """One request's fate: `ok` (and its `factor`, `version`) or the
    `error` met; `wrong` names what was wrong with an answer."""

    __slots__ = ("sent", "done", "ok", "factor", "version", "error", "wrong")

    def __init__(self, sent, done, ok, factor=None, version=None, error=None):
        self.sent, self.done, self.ok = sent, done, ok
        self.factor, self.version, self.error = factor, version, error
        self.wrong = None


def _factor(x, y, versions):
    """The version whose factor gives `y` from `x`, or None."""
    for version in versions:
        if len(y) == len(x) and all(
            abs(b - version * a) <= 1e-5 * max(1.0, abs(version * a))
            for a, b in zip(x, y)
        ):
            return version
    return None


class Client:
    """Sends predict requests back to back until stopped."""

    def __init__(self, protocol, ports, versions, seed):
        self.protocol = protocol
        self.ports = ports
        self.versions = versions
        self.random = random.Random(seed)
        self.answers = []
        self._rest_api = rest_client.RestPredictions(
            ports["rest_port"], REQUEST_TIMEOUT
        )
        self._stub = None
        self._channel = None

    def loop(self, stop, deadline):
        try:
            for _ in range(MAX_REQUESTS):
                if stop.is_set() or time.monotonic() > deadline:
                    return
                x = [round(self.random.uniform(-8, 8), 2) for _ in range(3)]
                answer = self._send(x)
                self.answers.append(answer)
                if not answer.ok:
                    time.sleep(FAILURE_PAUSE)  # a dead server: no hammering
        finally:
            self._rest_api.close()
            if self._channel is not None:
                self._channel.close()

    def _send(self, x):
        sent = time.monotonic()
        if self.protocol == "rest":
            ok, y, version, error = self._rest(x)
        else:
            ok, y, version, error = self._grpc(x)
        answer = Answer(
            sent, time.monotonic(), ok, version=version, error=error
        )
        if ok:
            answer.factor = _factor(x, y, self.versions)
            if answer.factor is None:
                answer.wrong = f"y={y} for x={x}"
            elif version is not None and version != answer.factor:
                answer.wrong = (
                    f"version {version} answered factor {answer.factor}"
                )
        return answer

    def _rest(self, x):
        body = json.dumps({"instances": x}).encode()
        error, predictions = self._rest_api.predict(
            f"/v1/models/{MODEL}:predict", body
        )
        return error is None, predictions, None, error

    def _grpc(self, x):
        if self._stub is None:
            self._channel = grpc.insecure_channel(
                f"127.0.0.1:{self.ports['grpc_port']}",
                options=[
                    # Reconnects within a second of a restart.
                    ("grpc.max_reconnect_backoff_ms", 1000),
                    ("grpc.use_local_subchannel_pool", 1),
                ],
            )
            self._stub = prediction_service_pb2_grpc.PredictionServiceStub(
                self._channel
            )
        request = predict_pb2.PredictRequest()
        request.model_spec.name = MODEL
        request.inputs["x"].CopyFrom(
            tf.make_tensor_proto(np.asarray(x, np.float32))
        )
        try:
            response = self._stub.Predict(request, timeout=REQUEST_TIMEOUT)
        except grpc.RpcError as error:
            return False, None, None, f"gRPC {error.code().name}"
        y = tf.make_ndarray(response.outputs["y"]).tolist()
        return True, y, response.model_spec.version.value, None


class Load:
    """`clients` `Client`s in threads, until `stop()`."""

    def __init__(self, protocol, clients, ports, versions):
        self.clients = [
            Client(protocol, ports, versions, seed) for seed in range(clients)
        ]
        self._stop = threading.Event()
        deadline = time.monotonic() + MAX_SECONDS
        self._threads = [
            threading.Thread(target=client.loop, args=(self._stop, deadline))
            for client in self.clients
        ]
        for thread in self._threads:
            thread.start()

    def answers(self):
        return [a for client in self.clients for a in list(client.answers)]

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        raise TimeoutError(f"Timed out waiting for {what}")

    def every_client(self, predicate):
        return all(
            any(predicate(a) for a in list(client.answers))
            for client in self.clients
        )

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(REQUEST_TIMEOUT + 30)


def _server_flags(base, batching, poll):
    flags = [
        f"--model_base_path={base}",
        f"--model_name={MODEL}",
        f"--file_system_poll_wait_seconds={poll}",
    ]
    if batching == "on":
        batching_file = os.path.join(os.path.dirname(base), "batching.config")
        with open(batching_file, "w") as file:
            file.write(
                "max_batch_size { value: 32 }\n"
                "batch_timeout_micros { value: 0 }\n"
                "num_batch_threads { value: 2 }\n"
                "max_enqueued_batches { value: 100 }\n"
            )
        flags += [
            "--enable_batching",
            f"--batching_parameters_file={batching_file}",
        ]
    return flags


def _version_state(server, version):
    try:
        status, body = server.rest(f"/v1/models/{MODEL}/versions/{version}")
    except OSError:
        return None
    if status != 200:
        return None
    return body["model_version_status"][0]


def run_scenario(scenario, protocol, batching, args, folder):
    """One scenario under load: its row of the table."""
    base = os.path.join(folder, MODEL)
    save_scaling_model(os.path.join(base, "1"), 1.0)
    flags = _server_flags(base, batching, args.poll)
    server = ServerProcess(flags)
    ports = dict(grpc_port=server.grpc_port, rest_port=server.rest_port)
    load = Load(protocol, args.clients, ports, versions=(1, 2))
    row = dict(scenario=scenario, protocol=protocol, batching=batching)
    try:
        load.wait(
            lambda: sum(a.ok for a in load.answers()) >= 10 * args.clients,
            60,
            "the first answers",
        )
        time.sleep(args.seconds)
        if scenario == "kill":
            event = time.monotonic()
            server.kill()
            time.sleep(args.down)
            server = ServerProcess(flags, **ports)
            started = time.monotonic()
            load.wait(
                lambda: load.every_client(lambda a: a.ok and a.sent > started),
                60,
                "every client answered by the new server",
            )
            first = min(
                a.done for a in load.answers() if a.ok and a.sent > event
            )
            every = max(
                min(a.done for a in c.answers if a.ok and a.sent > started)
                for c in load.clients
            )
            row.update(
                answered_after_s=first - event,
                after_start_s=first - started,
                all_answered_after_s=every - event,
            )
        elif scenario == "new version":
            save_scaling_model(os.path.join(base, "2"), 2.0)
            event = time.monotonic()
            load.wait(
                lambda: load.every_client(lambda a: a.ok and a.factor == 2),
                60,
                "every client answered by version 2",
            )
            answers = load.answers()
            first = min(a.done for a in answers if a.ok and a.factor == 2)
            every = max(
                min(a.done for a in c.answers if a.ok and a.factor == 2)
                for c in load.clients
            )
            row.update(
                answered_after_s=first - event,
                all_answered_after_s=every - event,
            )
        else:
            write_corrupt_version(os.path.join(base, "2"))
            event = time.monotonic()
            server.wait_for(
                lambda: (_version_state(server, 2) or {}).get("state") == "END",
                60,
                "version 2 to fail",
            )
            row["answered_after_s"] = time.monotonic() - event
            state = _version_state(server, 2)
            row["version_2_error"] = state["status"]["error_message"][:120]
            row["version_1_state"] = _version_state(server, 1)["state"]
        time.sleep(args.seconds)
    finally:
        load.stop()
        server.stop()
    _count(row, scenario, load)
    return row


def _count(row, scenario, load):
    answers = load.answers()
    for client in load.clients:  # a version 1 answer after a version 2 one
        seen_two = False
        for answer in client.answers:
            if answer.ok and answer.factor == 2:
                seen_two = True
            elif answer.ok and seen_two and answer.wrong is None:
                answer.wrong = "version 1 after version 2"
    failed = [a for a in answers if not a.ok]
    wrong = [a for a in answers if a.wrong is not None]
    row.update(
        sent=len(answers),
        failed=len(failed),
        wrong=len(wrong),
        version_1_answers=sum(a.ok and a.factor == 1 for a in answers),
        version_2_answers=sum(a.ok and a.factor == 2 for a in answers),
        failures=sorted({a.error for a in failed}),
        wrong_examples=sorted({a.wrong for a in wrong})[:3],
    )


_HEADER = (
    f"{'scenario':16} {'protocol':8} {'batching':8} {'sent':>6} "
    f"{'failed':>6} {'wrong':>5} {'v1':>6} {'v2':>6} {'after s':>8}  notes"
)


def _row(row):
    notes = []
    if row["scenario"] == "kill":
        notes.append(
            f"(start) {row['after_start_s']:.2f} s, "
            f"(all) {row['all_answered_after_s']:.2f} s"
        )
    elif row["scenario"] == "new version":
        notes.append(f"(all) {row['all_answered_after_s']:.2f} s")
    else:
        notes.append(f"v1 {row['version_1_state']}")
    if row["failures"]:
        notes.append("failures: " + ", ".join(row["failures"]))
    if row["wrong_examples"]:
        notes.append("wrong: " + "; ".join(row["wrong_examples"]))
    return (
        f"{row['scenario']:16} {row['protocol']:8} {row['batching']:8} "
        f"{row['sent']:>6} {row['failed']:>6} {row['wrong']:>5} "
        f"{row['version_1_answers']:>6} {row['version_2_answers']:>6} "
        f"{row['answered_after_s']:>8.2f}  " + "; ".join(notes)
    )


def main(argv=None):
    args = parse_arguments(argv)
    rows = []
    print(_HEADER, flush=True)
    for batching in args.batching:
        for protocol in args.protocols:
            for scenario in args.scenarios:
                folder = tempfile.mkdtemp(prefix="serving-faults-")
                try:
                    row = run_scenario(
                        scenario, protocol, batching, args, folder
                    )
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                rows.append(row)
                print(_row(row), flush=True)
    if args.out:
        harness.write_json(
            args.out,
            "serving_faults",
            rows,
            command=harness.command_line("serving_faults", argv),
            arguments=vars(args),
        )
    bad = [
        r
        for r in rows
        if r["wrong"] or (r["scenario"] != "kill" and r["failed"])
    ]
    print(
        f"\n{len(rows)} runs; wrong answers: {sum(r['wrong'] for r in rows)}; "
        "failed requests outside the kill: "
        f"{sum(r['failed'] for r in rows if r['scenario'] != 'kill')}"
        + ("" if not bad else "  <- NOT as it should be")
    )
    return rows


def parse_arguments(argv=None):
    parser = harness.serving_parser(
        __doc__,
        "serving_faults",
        batching=["off", "on"],
        out_help="where serving_faults.json goes ('' for nowhere)",
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS)
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="under load before the fault, and after it",
    )
    parser.add_argument(
        "--down", type=float, default=1.0, help="kill: seconds without server"
    )
    parser.add_argument(
        "--poll",
        type=float,
        default=1.0,
        help="--file_system_poll_wait_seconds (TF Serving's default: 1)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
