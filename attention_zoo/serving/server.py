"""`serve(options)`: the gRPC and REST servers over a `ModelServer`.

Startup follows TF Serving: the models' current versions are loaded and
warmed up first, then the gRPC server starts, then REST; each prints the
line TF Serving prints (`Running gRPC ModelServer at HOST:PORT ...`,
`Exporting HTTP/REST API at:HOST:PORT ...`), which scripts wait for.
SIGTERM or SIGINT stops it gracefully: no new connections, the requests
in flight answered (up to a few seconds), queued batches run. Both APIs
share one `RequestBudget` (`--max_request_bytes_in_flight`).
"""

import asyncio
import logging
import signal
import sys

from attention_zoo.serving import flags
from attention_zoo.serving.admission import RequestBudget
from attention_zoo.serving.model_server import ModelServer

logger = logging.getLogger("attention_zoo.serving")
GRACE_SECONDS = 5


def serve(options):
    """Runs the servers until SIGTERM or SIGINT (see the module doc)."""
    model_server = ModelServer(
        options.models,
        batching=options.batching,
        max_request_examples=options.max_request_examples,
        poll_seconds=options.poll_seconds,
    )
    model_server.start()
    try:
        asyncio.run(_run(model_server, options))
    finally:
        model_server.stop()


async def _run(model_server, options):
    # lazy: `attention-zoo serve --help` imports neither aiohttp nor the
    # APIs (TF Serving's protos import TensorFlow)
    from aiohttp import web

    # lazy: as `aiohttp` above
    from attention_zoo.serving import grpc_api
    from attention_zoo.serving import rest_api

    budget = RequestBudget(options.max_request_bytes_in_flight)
    logger.info(
        "Requests: up to %d bytes each (--max_request_bytes), %d bytes at "
        "once (--max_request_bytes_in_flight)",
        options.max_request_bytes,
        options.max_request_bytes_in_flight,
    )
    grpc_server, port = grpc_api.make_server(
        model_server,
        options.host,
        options.port,
        options.max_request_bytes,
        budget=budget,
        wait_seconds=options.rest_api_timeout_ms / 1000,
    )
    _announce(f"Running gRPC ModelServer at {options.host}:{port} ...")
    runner = None
    if options.rest_api_port:
        app = rest_api.make_app(
            model_server,
            timeout_ms=options.rest_api_timeout_ms,
            max_request_bytes=options.max_request_bytes,
            metrics_path=options.metrics_path,
            threads=options.threads,
            budget=budget,
        )
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, options.host, options.rest_api_port)
        await site.start()
        _announce(
            f"Exporting HTTP/REST API at:{options.host}:"
            f"{options.rest_api_port} ..."
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    logger.info("Stopping: answering the requests in flight")
    stopped = grpc_server.stop(GRACE_SECONDS)
    if runner is not None:
        await runner.cleanup()
    await loop.run_in_executor(None, stopped.wait)


def _announce(line):
    print(line, flush=True)


def main(argv=None, resolve=None):
    """`attention-zoo serve`: parses TF Serving's flags and serves."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    options = flags.parse(sys.argv[1:] if argv is None else argv, resolve)
    serve(options)
    return 0
