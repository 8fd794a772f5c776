"""A translation export that samples, behind `attention-zoo serve` with
batching: a text with a seed gets the same translation alone, batched
with other clients' requests or in one request with others, and the
same as `translate(..., seed=[...])` in Python."""

import concurrent.futures

import pytest

from applications import registry
from attention_zoo.serving.process import ServerProcess
from tests.support import tiny_bundles

SAMPLING = {"sampling": "top_p", "top_p": 0.95, "temperature": 1.5}
PREDICT = "/v1/models/translation:predict"


@pytest.fixture(scope="module")
def served(tmp_path_factory, shared):
    """`(server, translator)`: the session's tiny translator
    (`tiny_bundles.tiny_bundle`) exported here to sample."""
    root = tmp_path_factory.mktemp("sampled")
    translator = tiny_bundles.tiny_bundle("translation", shared)
    translator.export(str(root / "translation" / "1"), **SAMPLING)
    batching = root / "batching.config"
    batching.write_text(
        "max_batch_size { value: 16 }\n"
        "batch_timeout_micros { value: 20000 }\n"
        "num_batch_threads { value: 2 }\n"
    )
    with ServerProcess(
        [
            "--model_name=translation",
            f"--model_base_path={root / 'translation'}",
            "--enable_batching",
            f"--batching_parameters_file={batching}",
        ]
    ) as server:
        yield server, translator


@pytest.fixture(scope="module")
def texts():
    (pairs,) = registry.get("translation").fit_arguments(8, seed=11)
    return [source for source, _ in pairs]


def _seeded(server, instances):
    status, answer = server.rest(
        PREDICT, {"signature_name": "seeded", "instances": instances}
    )
    assert status == 200, answer
    return [p["translation"] for p in answer["predictions"]]


def test_a_seed_draws_alike_alone_batched_and_in_python(served, texts):
    server, translator = served
    seeds = [7, 2**32 - 1, 0, 99, 7, 12, 123456, 5]
    expected = translator.translate(texts, seed=seeds, **SAMPLING)
    instances = [{"text": t, "seed": s} for t, s in zip(texts, seeds)]
    # One request with all eight.
    assert _seeded(server, instances) == expected
    # Eight clients at once: the server batches them as it likes.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda x: _seeded(server, [x]), instances))
    assert [answer[0] for answer in answers] == expected


def test_serving_default_returns_the_seeds_it_drew(served, texts):
    server, _ = served
    status, answer = server.rest(PREDICT, {"instances": texts[:3]})
    assert status == 200, answer
    predictions = answer["predictions"]
    assert all(0 <= p["seed"] < 2**32 for p in predictions)
    again = _seeded(
        server,
        [{"text": t, "seed": p["seed"]} for t, p in zip(texts, predictions)],
    )
    assert again == [p["translation"] for p in predictions]
