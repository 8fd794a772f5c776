"""`Batcher`: merging, splitting, limits, padding, draining (NumPy only)."""

import threading
import time
import types

import numpy as np
import pytest

from attention_zoo.serving.batching import Batcher
from attention_zoo.serving.status import ServingError


def parameters(**changes):
    values = dict(
        max_batch_size=8,
        batch_timeout_micros=200_000,
        max_enqueued_batches=4,
        num_batch_threads=1,
        allowed_batch_sizes=(),
        pad_variable_length_inputs=False,
    )
    values.update(changes)
    return types.SimpleNamespace(**values)


class Recorder:
    """A function `x -> {"y": 2x + row index within its batch}`, keeping
    the batch sizes it was called with."""

    def __init__(self, delay=0.0):
        self.sizes = []
        self.delay = delay
        self.lock = threading.Lock()
        self.started = threading.Event()  # set by the first call

    def __call__(self, arrays):
        self.started.set()
        time.sleep(self.delay)
        with self.lock:
            self.sizes.append(len(arrays["x"]))
        return {"y": 2 * arrays["x"], "n": np.full(len(arrays["x"]), 1.0)}


def run_concurrently(batcher, requests):
    results = [None] * len(requests)
    errors = [None] * len(requests)

    def call(index):
        try:
            results[index] = batcher.run(requests[index])
        except Exception as error:
            errors[index] = error

    threads = [
        threading.Thread(target=call, args=(i,)) for i in range(len(requests))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return results, errors


def test_concurrent_requests_are_merged_and_split_back():
    function = Recorder()
    batcher = Batcher(function, parameters())
    requests = [
        {"x": np.arange(i, i + size, dtype=np.float32)}
        for i, size in [(0, 1), (10, 2), (20, 3)]
    ]
    results, errors = run_concurrently(batcher, requests)
    batcher.stop()
    assert errors == [None] * 3
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(result["y"], 2 * request["x"])
        assert len(result["n"]) == len(request["x"])
    assert sum(function.sizes) == 6
    assert len(function.sizes) < 3  # at least two requests shared a call


def test_a_full_batch_runs_before_the_timeout():
    function = Recorder()
    batcher = Batcher(function, parameters(batch_timeout_micros=30_000_000))
    start = time.monotonic()
    results, errors = run_concurrently(
        batcher, [{"x": np.ones(4, np.float32)}] * 2
    )
    batcher.stop()
    assert errors == [None, None]
    assert time.monotonic() - start < 10
    assert function.sizes == [8]


def test_requests_of_different_shapes_are_not_merged():
    function = Recorder()
    batcher = Batcher(function, parameters(batch_timeout_micros=100_000))
    requests = [
        {"x": np.ones((1, 3), np.float32)},
        {"x": np.ones((1, 5), np.float32)},
    ]
    results, errors = run_concurrently(batcher, requests)
    batcher.stop()
    assert errors == [None, None]
    assert sorted(function.sizes) == [1, 1]
    assert results[1]["y"].shape == (1, 5)


def reference_padding(array, shape):
    """TF Serving's padding, written out: each axis after the first
    extended at its end with the tensor's first element."""
    widths = [(0, 0)] + [(0, t - n) for n, t in zip(array.shape[1:], shape)]
    if array.dtype == object:  # np.pad's constant mode wants numbers
        result = np.empty((array.shape[0], *shape), dtype=object)
        result[...] = array.flat[0]
        result[tuple(slice(0, n) for n in array.shape)] = array
        return result
    return np.pad(array, widths, constant_values=array.flat[0])


def test_variable_length_inputs_are_padded_with_their_first_element():
    seen = []

    def function(arrays):
        seen.append({name: array.copy() for name, array in arrays.items()})
        return {"y": 2 * arrays["x"], "s": arrays["s"]}

    batcher = Batcher(
        function,
        parameters(batch_timeout_micros=300_000, pad_variable_length_inputs=1),
    )
    rng = np.random.default_rng(0)
    shapes = [(1, 5, 2), (2, 3, 2), (1, 4, 2)]  # TF Serving's example, small
    requests = [
        {
            "x": rng.normal(size=shape).astype(np.float32),
            "s": np.array(
                [[f"w{i}{j}" for j in range(shape[1])]] * shape[0], object
            ),
        }
        for i, shape in enumerate(shapes)
    ]
    results, errors = run_concurrently(batcher, requests)
    batcher.stop()
    assert errors == [None] * 3
    assert len(seen) == 1  # one batch of 4 examples
    merged = seen[0]
    assert merged["x"].shape == (4, 5, 2)
    # The merged batch is the padded requests in arrival order.
    firsts = [float(row[0, 0]) for row in merged["x"]]
    order = sorted(
        range(3), key=lambda i: firsts.index(requests[i]["x"][0, 0, 0])
    )
    for name, shape in (("x", (5, 2)), ("s", (5,))):
        np.testing.assert_array_equal(
            merged[name],
            np.concatenate(
                [reference_padding(requests[i][name], shape) for i in order]
            ),
        )
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(
            result["y"], 2 * reference_padding(request["x"], (5, 2))
        )
        np.testing.assert_array_equal(
            result["s"], reference_padding(request["s"], (5,))
        )
    # The string padding is the request's own first string.
    assert list(results[1]["s"][1]) == ["w10", "w11", "w12", "w10", "w10"]


def test_padding_keeps_dtypes_and_ranks_apart_and_fills_empty_inputs():
    function = Recorder()
    batcher = Batcher(
        function,
        parameters(batch_timeout_micros=300_000, pad_variable_length_inputs=1),
    )
    requests = [
        {"x": np.ones((1, 3), np.float32)},
        {"x": np.zeros((1, 0), np.float32)},  # nothing to repeat: zeros
        {"x": np.ones((1, 2), np.float64)},  # another dtype
        {"x": np.ones((1, 2, 1), np.float32)},  # another rank
    ]
    results, errors = run_concurrently(batcher, requests)
    batcher.stop()
    assert errors == [None] * 4
    assert sorted(function.sizes) == [1, 1, 2]
    np.testing.assert_array_equal(results[0]["y"], [[2, 2, 2]])
    np.testing.assert_array_equal(results[1]["y"], [[0, 0, 0]])
    assert results[2]["y"].dtype == np.float64
    assert results[3]["y"].shape == (1, 2, 1)


def test_a_request_over_max_batch_size_is_refused_naming_the_limit():
    batcher = Batcher(Recorder(), parameters(max_batch_size=4))
    with pytest.raises(
        ServingError, match="larger than maximum input batch size 4"
    ) as caught:
        batcher.submit({"x": np.ones(5, np.float32)})
    batcher.stop()
    assert caught.value.code == "INVALID_ARGUMENT"


def test_a_full_queue_refuses_with_unavailable():
    function = Recorder(delay=0.5)
    batcher = Batcher(
        function,
        parameters(
            max_batch_size=2, max_enqueued_batches=1, batch_timeout_micros=0
        ),
    )
    first = batcher.submit({"x": np.ones(2, np.float32)})  # runs
    assert function.started.wait(5)  # the first batch left the queue
    queued = batcher.submit({"x": np.ones(2, np.float32)})  # waits
    with pytest.raises(ServingError, match="queue .* is full") as caught:
        batcher.submit({"x": np.ones(1, np.float32)})
    assert caught.value.code == "UNAVAILABLE"
    assert first.result(5)["y"].shape == (2,)
    assert queued.result(5)["y"].shape == (2,)
    batcher.stop()


def test_allowed_batch_sizes_pad_the_batch_and_cut_the_padding_off():
    function = Recorder()
    batcher = Batcher(
        function, parameters(allowed_batch_sizes=(4, 8), batch_timeout_micros=0)
    )
    result = batcher.run({"x": np.array([3.0], np.float32)})
    batcher.stop()
    assert function.sizes == [4]
    np.testing.assert_array_equal(result["y"], [6.0])


def test_an_error_reaches_every_request_of_the_batch():
    def failing(arrays):
        raise ServingError("INVALID_ARGUMENT", "bad batch")

    batcher = Batcher(failing, parameters())
    results, errors = run_concurrently(
        batcher, [{"x": np.ones(1, np.float32)}] * 3
    )
    batcher.stop()
    assert all(isinstance(e, ServingError) for e in errors)


def test_an_output_without_the_batch_dimension_is_an_internal_error():
    batcher = Batcher(
        lambda arrays: {"y": np.ones(3)}, parameters(batch_timeout_micros=0)
    )
    with pytest.raises(ServingError, match="not the batch size") as caught:
        batcher.run({"x": np.ones(2, np.float32)})
    batcher.stop()
    assert caught.value.code == "INTERNAL"


def test_stop_runs_what_is_queued_then_refuses():
    function = Recorder(delay=0.2)
    batcher = Batcher(
        function, parameters(batch_timeout_micros=0, max_batch_size=1)
    )
    futures = [batcher.submit({"x": np.ones(1, np.float32)}) for _ in range(3)]
    batcher.stop()
    assert all(f.result(0)["y"].shape == (1,) for f in futures)
    with pytest.raises(ServingError, match="unloading"):
        batcher.submit({"x": np.ones(1, np.float32)})
