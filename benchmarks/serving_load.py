"""`attention-zoo serve` under load: requests/s and latency (issue 19).

Run from the repository root (the figures of the site's serving page):

    python -m benchmarks.serving_load --rounds 3 --seconds 4 --warmup 1
    python -m benchmarks.serving_load --apps entailment --clients 1 8 \\
        --seconds 2

For each application's export (the shipped `translation-spa-eng`,
`entailment-snli` and `captioning-flickr8k`; for EHR, which ships none,
`attention-zoo train ehr --epochs 1` on its default generated patients,
exported once into `--out` and reused), two servers are started with
`ServerProcess` on loopback ports, one with `--enable_batching` (the
parameters of `--max-batch-size` ... below) and one without, both with the
Prometheus page on. Each cell is (clients, protocol, batching): `--clients`
client threads send predict requests back to back for `--warmup` seconds,
then for `--seconds` measured ones; the two servers' cells alternate, so a
noisy spell touches both sides of the batching ratio.

- Each request carries one example (a Spanish sentence, a premise and
  hypothesis pair, a JPEG photo, a generated patient), cycling through 8 of
  them so that no cache flatters. EHR patients are padded with "" to the
  longest of the 8 records on the client side: the batcher merges only
  requests of the same shape, and `pad_variable_length_inputs` would pad
  the codes with each patient's first code, which the export reads as
  more events.
- The clients run in a second process (the benchmark's own process holds
  TensorFlow and the in-process model): one thread per client, each with
  its own keep-alive `http.client.HTTPConnection` (REST, TF Serving's
  `{"instances": [...]}` JSON) or its own gRPC channel (a
  `PredictRequest` serialized once with `tf.make_tensor_proto`, sent to
  `PredictionService/Predict`: the bytes the official stub sends). Every
  answer is checked: an error is an HTTP status other than 200, a gRPC
  status other than OK or a connection failure; a wrong answer is one
  whose checked output (the translation, the label, the caption, the
  risk within 1e-4) is not what the signature gives in process.
- With `--rounds N` every cell is measured N times (the rounds in turn)
  and the summary gives the medians.
- Throughput counts the answers received in the measured window;
  latencies are those answers' times (p50, p99). The window's CPU time of
  the server process and of the client process, in % of one core (the
  machine's two cores are shared by both), and the mean size of the
  batches the server ran (its `processed_batch_size` histogram) say where
  the time went.
- The ceiling: the export loaded in this process (`tf.saved_model.load`
  after `import tensorflow_text`), `serving_default` called on one example
  at a time in a loop for `--seconds` (examples/s, p50, p99), and on 32
  examples at once (examples/s, the median of repeated calls). It is
  measured before the servers start.

The aim (issue 19): with batching, 32 concurrent clients get at least 5x
the requests/s of batching off, with zero errors; the ratio is printed
per application and protocol. `--out` holds the JSON of every cell
(`serving_load.json`) and the EHR export.
"""

import base64
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time

# The serving benchmarks' backend, set before the harness imports Keras.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import grpc  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (registers the tokenizer ops)
from tensorflow_serving.apis import predict_pb2  # noqa: E402

from attention_zoo.export import atomic_directory  # noqa: E402
from attention_zoo.serving.process import ServerProcess  # noqa: E402
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from benchmarks import rest_client  # noqa: E402

ROOT = harness.ROOT  # the repository root

APPLICATIONS = ("translation", "entailment", "captioning", "ehr")
# Not run by default: a SavedModel that returns its input, so that what a
# request costs is the server's own work (the front end's ceiling).
ECHO = "echo"
SHIPPED = {
    "translation": "saved_models/translation-spa-eng",
    "entailment": "saved_models/entailment-snli",
    "captioning": "saved_models/captioning-flickr8k",
}
# The output compared with the in-process answer, for every answer.
CHECKED_OUTPUT = {
    "translation": "translation",
    "entailment": "label",
    "captioning": "caption",
    "ehr": "risk",
    ECHO: "echo",
}
FLOAT_TOLERANCE = 1e-4
EXAMPLES = 8
CEILING_BATCH = 32
REQUEST_TIMEOUT = 60  # seconds, per request
MAX_REQUESTS = 1_000_000  # per client thread and cell
METRICS_PATH = "/monitoring/prometheus/metrics"
BATCH_SIZE_METRIC = ":tensorflow:serving:batching_session:processed_batch_size"
GRPC_PREDICT = "/tensorflow.serving.PredictionService/Predict"

SENTENCES = (
    "¿Dónde está la biblioteca?",
    "Tengo hambre.",
    "Me gusta leer libros por la noche.",
    "Ella vive en una casa pequeña cerca del río.",
    "¿Puedes ayudarme, por favor?",
    "Mañana vamos a la playa con mis amigos.",
    "El tren llega a las cinco.",
    "No sé qué hacer.",
)
PAIRS = (
    ("A man plays a guitar on stage.", "A man is making music."),
    ("Two dogs run through the snow.", "The dogs are sleeping."),
    ("A woman is reading a book in a park.", "A person is outdoors."),
    ("A child kicks a red ball.", "A child is playing soccer."),
    ("People are waiting for a bus.", "Nobody is at the bus stop."),
    ("A cook prepares food in a kitchen.", "Someone is cooking."),
    ("A boy jumps into a swimming pool.", "A boy is swimming."),
    ("An old man sits on a bench.", "A man is running a marathon."),
)
IMAGE = "attention_zoo_apps/demo/examples/chelsea.png"


# The examples, their requests and the in-process answers.


def make_examples(application):
    """`EXAMPLES` single-example inputs: name -> NumPy array (batch 1)."""
    if application in ("translation", ECHO):
        return [{"text": np.array([s.encode()], object)} for s in SENTENCES]
    if application == "entailment":
        return [
            {
                "premise": np.array([p.encode()], object),
                "hypothesis": np.array([h.encode()], object),
            }
            for p, h in PAIRS
        ]
    if application == "captioning":
        return [{"image": np.array([jpeg], object)} for jpeg in _photos()]
    if application == "ehr":
        return _patients()
    raise ValueError(f"Unknown application: {application!r}")


def _photos():
    """8 JPEGs: crops and mirror images of the demo's photo."""
    with open(os.path.join(ROOT, IMAGE), "rb") as file:
        image = tf.io.decode_png(file.read(), channels=3)
    height, width = int(image.shape[0]), int(image.shape[1])
    photos = []
    for k in range(EXAMPLES):
        top, left = (k % 2) * height // 8, (k // 2) * width // 16
        crop = image[top : top + height * 7 // 8, left : left + width * 3 // 4]
        if k % 3 == 0:
            crop = tf.image.flip_left_right(crop)
        photos.append(tf.io.encode_jpeg(crop, quality=90).numpy())
    return photos


def _patients():
    """8 generated patients, their events padded to the longest record."""
    records = make_synthetic_patients(EXAMPLES, seed=1).records
    width = max(len(codes) for codes in records.codes)
    examples = []
    for i in range(EXAMPLES):
        count = len(records.codes[i])
        codes = np.full((1, width), b"", object)
        codes[0, :count] = [code.encode() for code in records.codes[i]]
        values = np.zeros((1, width), np.float32)
        values[0, :count] = records.values[i]
        times = np.zeros((1, width), np.float32)
        times[0, :count] = records.times[i]
        examples.append(
            {
                "codes": codes,
                "values": values,
                "times": times,
                "prediction_time": np.array(
                    [records.prediction_times[i]], np.float32
                ),
                "note": np.array([records.notes[i].encode()], object),
            }
        )
    return examples


def rest_body(application, example):
    """TF Serving's row layout of one example, as JSON bytes."""

    def value(name, array):
        item = array[0]
        if name == "image":
            return {"b64": base64.b64encode(item).decode("ascii")}
        if array.dtype == object:
            if np.ndim(item):
                return [v.decode() for v in item]
            return item.decode()
        return item.tolist()

    row = {name: value(name, array) for name, array in example.items()}
    instance = next(iter(row.values())) if len(row) == 1 else row
    return json.dumps({"instances": [instance]}).encode()


def grpc_body(application, example):
    """A serialized `PredictRequest` of one example."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = application
    for name, array in example.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(array))
    return request.SerializeToString()


def _answer_value(value):
    """A checked output's first row as str or float."""
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else float(value)


def _tensors(signature, example):
    specs = signature.structured_input_signature[1]
    return {
        name: tf.constant(array, specs[name].dtype)
        for name, array in example.items()
    }


def in_process(path, application, examples, seconds, warmup):
    """The ceiling: `(row, expected answers)` from the loaded export."""
    signature = tf.saved_model.load(path).signatures["serving_default"]
    inputs = [_tensors(signature, example) for example in examples]
    output = CHECKED_OUTPUT[application]
    expected = []
    for tensors in inputs:
        value = signature(**tensors)[output].numpy()[0]
        expected.append(_answer_value(value))
    # One example at a time.
    end = time.monotonic() + warmup
    k = 0
    while time.monotonic() < end:
        _call(signature, inputs[k % len(inputs)])
        k += 1
    latencies = []
    start, cpu = time.monotonic(), time.process_time()
    end = start + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        _call(signature, inputs[len(latencies) % len(inputs)])
        latencies.append(time.perf_counter() - t0)
    elapsed = time.monotonic() - start
    cpu = time.process_time() - cpu
    # 32 examples in one call.
    batch = {
        name: np.concatenate(
            [examples[i % len(examples)][name] for i in range(CEILING_BATCH)]
        )
        for name in examples[0]
    }
    batch = _tensors(signature, batch)
    _call(signature, batch)
    times = []
    end = time.monotonic() + max(seconds / 2, 1.0)
    batch_cpu = time.process_time()
    while time.monotonic() < end or len(times) < 3:
        t0 = time.perf_counter()
        _call(signature, batch)
        times.append(time.perf_counter() - t0)
    batch_cpu = time.process_time() - batch_cpu
    row = {
        "examples_per_s": len(latencies) / elapsed,
        "p50_ms": 1000 * _quantile(latencies, 0.5),
        "p99_ms": 1000 * _quantile(latencies, 0.99),
        "batch32_examples_per_s": CEILING_BATCH / statistics.median(times),
        "batch32_ms": 1000 * statistics.median(times),
        # CPU time of this process (every thread) per example.
        "cpu_ms_per_example": 1000 * cpu / len(latencies),
        "batch32_cpu_ms_per_example": 1000
        * batch_cpu
        / (CEILING_BATCH * len(times)),
    }
    return row, expected


def _call(signature, tensors):
    return {name: value.numpy() for name, value in signature(**tensors).items()}


def _quantile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# The client process: threads sending requests, no TensorFlow calls. It
# imports this module, so TensorFlow's package too (as the gRPC protos
# would anyway), before any cell: nothing of it runs in a measured window.


def _client_process(connection):
    """Runs the cells the benchmark sends, until it sends `None`."""
    while True:
        job = connection.recv()
        if job is None:
            return
        try:
            connection.send(run_cell(**job))
        except Exception as error:  # reported, the benchmark decides
            connection.send({"failure": f"{type(error).__name__}: {error}"})


def run_cell(
    protocol,
    port,
    rest_port,
    path,
    bodies,
    expected,
    output,
    clients,
    warmup,
    seconds,
    server_pid,
):
    """One cell: `clients` threads sending `bodies` in turn; the figures
    of the answers received in the measured window."""
    start = time.monotonic() + 0.2
    window = (start + warmup, start + warmup + seconds)
    senders = [
        _Sender(protocol, port, path, bodies, expected, output, i)
        for i in range(clients)
    ]
    threads = [
        threading.Thread(target=sender.loop, args=(start, window))
        for sender in senders
    ]
    for thread in threads:
        thread.start()
    _sleep_until(window[0])
    before = _snapshot(server_pid, rest_port)
    _sleep_until(window[1])
    after = _snapshot(server_pid, rest_port)
    for thread in threads:
        thread.join(REQUEST_TIMEOUT + 10)
    latencies = [t for sender in senders for t in sender.latencies]
    errors = [e for sender in senders for e in sender.errors]
    wrong = [w for sender in senders for w in sender.wrong]
    batches = after["batches"] - before["batches"]
    examples = after["batched_examples"] - before["batched_examples"]
    return {
        "requests_per_s": len(latencies) / seconds,
        "answers": len(latencies),
        "p50_ms": 1000 * _quantile(latencies, 0.5),
        "p99_ms": 1000 * _quantile(latencies, 0.99),
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:3],
        "wrong": len(wrong),
        "wrong_examples": sorted(set(wrong))[:3],
        "warmup_errors": sum(s.warmup_errors for s in senders),
        "server_cpu_percent": 100
        * (after["server_cpu"] - before["server_cpu"])
        / seconds,
        "client_cpu_percent": 100
        * (after["client_cpu"] - before["client_cpu"])
        / seconds,
        "mean_batch_size": examples / batches if batches else float("nan"),
        "server_cpu_ms_per_request": 1000
        * (after["server_cpu"] - before["server_cpu"])
        / max(len(latencies), 1),
        # The machine's 1-minute load average at the window's end.
        "load_average": os.getloadavg()[0],
        "stuck_threads": sum(thread.is_alive() for thread in threads),
    }


def _sleep_until(moment):
    time.sleep(max(0.0, moment - time.monotonic()))


def _snapshot(server_pid, rest_port):
    """CPU seconds of the server and of this process, and the server's
    batch-size histogram (count, sum)."""
    with open(f"/proc/{server_pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    times = os.times()
    batches = examples = 0.0
    connection = http.client.HTTPConnection("127.0.0.1", rest_port, timeout=30)
    try:
        connection.request("GET", METRICS_PATH)
        page = connection.getresponse().read().decode()
    finally:
        connection.close()
    for line in page.splitlines():
        if line.startswith(BATCH_SIZE_METRIC + "_count"):
            batches += float(line.rsplit(" ", 1)[1])
        elif line.startswith(BATCH_SIZE_METRIC + "_sum"):
            examples += float(line.rsplit(" ", 1)[1])
    return {
        # utime and stime, fields 14 and 15 of /proc/PID/stat.
        "server_cpu": (int(fields[11]) + int(fields[12])) / ticks,
        "client_cpu": times.user + times.system,
        "batches": batches,
        "batched_examples": examples,
    }


class _Sender:
    """One client: a keep-alive HTTP connection or a gRPC channel of its
    own, sending back to back and recording every answer."""

    def __init__(self, protocol, port, path, bodies, expected, output, index):
        self.protocol = protocol
        self.port = port
        self.path = path
        self.bodies = bodies
        self.expected = expected
        self.output = output
        self.index = index
        self.latencies = []
        self.errors = []
        self.wrong = []
        self.warmup_errors = 0
        self._rest_api = rest_client.RestPredictions(port, REQUEST_TIMEOUT)
        self._channel = None

    def loop(self, start, window):
        _sleep_until(start)
        try:
            for k in range(MAX_REQUESTS):
                t0 = time.monotonic()
                if t0 >= window[1]:
                    break
                example = (self.index + k) % len(self.bodies)
                error, value = self._send(self.bodies[example])
                t1 = time.monotonic()
                if not window[0] <= t1 <= window[1]:
                    self.warmup_errors += error is not None and t1 < window[0]
                    continue
                if error is not None:
                    self.errors.append(error)
                    time.sleep(0.01)
                    continue
                self.latencies.append(t1 - t0)
                if not _same(value, self.expected[example]):
                    self.wrong.append(
                        f"{value!r} != {self.expected[example]!r}"
                    )
        finally:
            self._rest_api.close()
            if self._channel is not None:
                self._channel.close()

    def _send(self, body):
        """`(error or None, the checked output's first row)`."""
        if self.protocol == "rest":
            return self._rest(body)
        return self._grpc(body)

    def _rest(self, body):
        error, predictions = self._rest_api.predict(self.path, body)
        if error is not None:
            return error, None
        return None, _answer_value(predictions[0][self.output])

    def _grpc(self, body):
        if self._channel is None:
            self._channel = grpc.insecure_channel(
                f"127.0.0.1:{self.port}",
                options=[("grpc.use_local_subchannel_pool", 1)],
            )
            self._predict = self._channel.unary_unary(GRPC_PREDICT)
        try:
            data = self._predict(body, timeout=REQUEST_TIMEOUT)
        except grpc.RpcError as error:
            return f"gRPC {error.code().name}: {error.details()}", None
        tensor = predict_pb2.PredictResponse.FromString(data).outputs[
            self.output
        ]
        return None, _first_value(tensor)


def _first_value(tensor):
    """The first element of a string or float32 `TensorProto` (the checked
    outputs), as str or float."""
    if tensor.string_val:
        return tensor.string_val[0].decode()
    if tensor.tensor_content:
        return float(np.frombuffer(tensor.tensor_content, np.float32)[0])
    return float(tensor.float_val[0])


def _same(value, expected):
    if isinstance(expected, float):
        return abs(value - expected) <= FLOAT_TOLERANCE
    return value == expected


# The servers and the cells.


def ehr_export(out):
    """The EHR export under `out`, trained (about 20 s) the first time."""
    base = os.path.join(out, "ehr-model")
    if not (os.path.isdir(base) and any(v.isdigit() for v in os.listdir(base))):
        command = [
            sys.executable,
            "-m",
            "attention_zoo_apps.cli",
            "train",
            "ehr",
            "--epochs",
            "1",
            "--run-dir",
            os.path.join(out, "ehr-run"),
            "--overwrite",
            "--export",
            base,
        ]
        print("training the EHR model:", " ".join(command[1:]), flush=True)
        subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return base


def echo_export(out):
    """A SavedModel under `out` whose `serving_default(text)` answers
    `{"echo": text, "length": its length}` (two outputs: REST rows are
    objects, as for the applications): next to no model, so a request
    costs the server's own work (parsing, checks, batching, answering)."""
    base = os.path.join(out, "echo-model-2")
    path = os.path.join(base, "1")
    if not os.path.isdir(path):

        class Echo(tf.Module):
            @tf.function(
                input_signature=[tf.TensorSpec([None], tf.string, name="text")]
            )
            def serve(self, text):
                return {"echo": text, "length": tf.strings.length(text)}

        module = Echo()
        with atomic_directory(path) as temporary:
            tf.saved_model.save(
                module, temporary, signatures={"serving_default": module.serve}
            )
    return base


def batching_file(out, args):
    path = os.path.join(out, "batching.config")
    with open(path, "w") as file:
        file.write(
            f"max_batch_size {{ value: {args.max_batch_size} }}\n"
            f"batch_timeout_micros {{ value: {args.batch_timeout_micros} }}\n"
            f"num_batch_threads {{ value: {args.num_batch_threads} }}\n"
            f"max_enqueued_batches {{ value: {args.max_enqueued_batches} }}\n"
        )
    return path


def start_server(application, base, batching, out, args):
    monitoring = os.path.join(out, "monitoring.config")
    with open(monitoring, "w") as file:
        file.write("prometheus_config { enable: true }\n")
    flags = [
        f"--model_name={application}",
        f"--model_base_path={os.path.abspath(base)}",
        f"--monitoring_config_file={monitoring}",
    ]
    if batching == "on":
        flags += [
            "--enable_batching",
            f"--batching_parameters_file={batching_file(out, args)}",
        ]
    return ServerProcess(flags)


def check_server(server, application, rest_bodies, grpc_bodies, expected):
    """Every example once per protocol, before the load: the answer the
    signature gives in process."""
    output = CHECKED_OUTPUT[application]
    channel = server.channel()
    stub = server.prediction_stub(channel)
    try:
        for rest, grpc_body, wanted in zip(rest_bodies, grpc_bodies, expected):
            status, answer = server.rest(
                f"/v1/models/{application}:predict", raw=rest
            )
            if status != 200:
                raise RuntimeError(f"REST {status}: {answer}")
            got = _answer_value(answer["predictions"][0][output])
            request = predict_pb2.PredictRequest.FromString(grpc_body)
            response = stub.Predict(request, timeout=REQUEST_TIMEOUT)
            value = tf.make_ndarray(response.outputs[output])[0]
            for found in (got, _answer_value(value)):
                if not _same(found, wanted):
                    raise RuntimeError(
                        f"{application}: served {found!r}, in process "
                        f"{wanted!r}"
                    )
    finally:
        channel.close()


def measure(args, command=None):
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    here, there = context.Pipe()
    clients = context.Process(target=_client_process, args=(there,))
    clients.start()
    results = {
        "arguments": vars(args),
        "batching_parameters": {
            "max_batch_size": args.max_batch_size,
            "batch_timeout_micros": args.batch_timeout_micros,
            "num_batch_threads": args.num_batch_threads,
            "max_enqueued_batches": args.max_enqueued_batches,
        },
        "applications": {},
    }
    try:
        for application in args.apps:
            results["applications"][application] = measure_application(
                application, args, out, here
            )
            _write(out, results, command)
    finally:
        here.send(None)
        clients.join(60)
    _write(out, results, command)
    print_summary(results, args)
    return results


def measure_application(application, args, out, pipe):
    if application == "ehr":
        base = ehr_export(out)
    elif application == ECHO:
        base = echo_export(out)
    else:
        base = os.path.join(ROOT, SHIPPED[application])
    version = max((v for v in os.listdir(base) if v.isdigit()), key=int)
    examples = make_examples(application)
    ceiling, expected = in_process(
        os.path.join(base, version),
        application,
        examples,
        args.seconds,
        args.warmup,
    )
    print(f"\n## {application}\n{_ceiling_line(ceiling)}", flush=True)
    rest_bodies = [rest_body(application, e) for e in examples]
    grpc_bodies = [grpc_body(application, e) for e in examples]
    servers = {}
    cells = []
    try:
        for batching in args.batching:
            servers[batching] = start_server(
                application, base, batching, out, args
            )
            check_server(
                servers[batching],
                application,
                rest_bodies,
                grpc_bodies,
                expected,
            )
        print(_HEADER, flush=True)
        for round_ in range(args.rounds):
            for protocol in args.protocols:
                for count in args.clients:
                    for batching in args.batching:
                        server = servers[batching]
                        job = dict(
                            protocol=protocol,
                            port=server.rest_port
                            if protocol == "rest"
                            else server.grpc_port,
                            rest_port=server.rest_port,
                            path=f"/v1/models/{application}:predict",
                            bodies=rest_bodies
                            if protocol == "rest"
                            else grpc_bodies,
                            expected=expected,
                            output=CHECKED_OUTPUT[application],
                            clients=count,
                            warmup=args.warmup,
                            seconds=args.seconds,
                            server_pid=server.process.pid,
                        )
                        pipe.send(job)
                        cell = pipe.recv()
                        if "failure" in cell:
                            raise RuntimeError(cell["failure"])
                        cell.update(
                            protocol=protocol,
                            clients=count,
                            batching=batching,
                            round=round_,
                        )
                        cells.append(cell)
                        print(_row(cell), flush=True)
    finally:
        for server in servers.values():
            server.stop()
    return {"ceiling": ceiling, "cells": cells, "expected": expected}


_HEADER = (
    f"{'protocol':8} {'clients':>7} {'batching':>8} {'req/s':>8} "
    f"{'p50 ms':>8} {'p99 ms':>8} {'errors':>6} {'wrong':>5} "
    f"{'batch':>6} {'server %':>8} {'client %':>8} {'cpu ms/req':>10} "
    f"{'load':>5}"
)


def _row(cell):
    return (
        f"{cell['protocol']:8} {cell['clients']:>7} {cell['batching']:>8} "
        f"{cell['requests_per_s']:>8.1f} {cell['p50_ms']:>8.1f} "
        f"{cell['p99_ms']:>8.1f} {cell['errors']:>6} {cell['wrong']:>5} "
        f"{cell['mean_batch_size']:>6.1f} "
        f"{cell['server_cpu_percent']:>8.0f} "
        f"{cell['client_cpu_percent']:>8.0f} "
        f"{cell['server_cpu_ms_per_request']:>10.2f} "
        f"{cell['load_average']:>5.1f}"
    )


def _ceiling_line(ceiling):
    return (
        f"in process: {ceiling['examples_per_s']:.1f} examples/s one at a "
        f"time (p50 {ceiling['p50_ms']:.1f} ms, p99 {ceiling['p99_ms']:.1f} "
        f"ms, {ceiling['cpu_ms_per_example']:.2f} CPU ms each); "
        f"{ceiling['batch32_examples_per_s']:.1f} examples/s in calls of "
        f"{CEILING_BATCH} ({ceiling['batch32_cpu_ms_per_example']:.2f} CPU "
        "ms per example)"
    )


def print_summary(results, args):
    print(
        "\n# Summary (medians of "
        f"{args.rounds} round(s) of {args.seconds:g} s per cell)"
    )
    for application, result in results["applications"].items():
        ceiling = result["ceiling"]
        rows = pages.median_cells(result["cells"])
        print(f"\n## {application}\n{_ceiling_line(ceiling)}")
        print(_HEADER)
        for row in sorted(
            rows,
            key=lambda r: (r["protocol"], r["clients"], r["batching"]),
        ):
            print(_row(row))
        for protocol in args.protocols:
            figures = {
                row["batching"]: row
                for row in rows
                if row["protocol"] == protocol
                and row["clients"] == max(args.clients)
            }
            if set(figures) != {"on", "off"}:
                continue
            on, off = figures["on"], figures["off"]
            ratio = on["requests_per_s"] / max(off["requests_per_s"], 1e-9)
            clean = on["errors"] + off["errors"] + on["wrong"] + off["wrong"]
            verdict = "met" if ratio >= 5 and not clean else "NOT met"
            print(
                f"batching ratio, {protocol}, {max(args.clients)} clients: "
                f"{on['requests_per_s']:.1f} / {off['requests_per_s']:.1f} "
                f"req/s = {ratio:.2f}x (aim >= 5x with 0 errors: {verdict})"
            )


def _write(out, results, command):
    harness.write_json(out, "serving_load", results, command=command)


def parse_arguments(argv=None):
    parser = harness.serving_parser(
        __doc__,
        "serving_load",
        batching=["on", "off"],
        out_help="the JSON of every cell, and the EHR export",
    )
    parser.add_argument(
        "--apps",
        nargs="+",
        choices=(*APPLICATIONS, ECHO),
        default=list(APPLICATIONS),
        help=f"{ECHO!r}: a model that returns its input, the server's own "
        "ceiling (not run by default)",
    )
    parser.add_argument("--clients", nargs="+", type=int, default=[1, 8, 32])
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="measured, per cell"
    )
    parser.add_argument(
        "--warmup", type=float, default=1.5, help="unmeasured, per cell"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds of every cell"
    )
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--batch-timeout-micros", type=int, default=0)
    parser.add_argument("--num-batch-threads", type=int, default=2)
    parser.add_argument("--max-enqueued-batches", type=int, default=100)
    return parser.parse_args(argv)


def main(argv=None):
    measure(parse_arguments(argv), harness.command_line("serving_load", argv))


if __name__ == "__main__":
    main()
