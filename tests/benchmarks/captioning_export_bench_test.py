"""`benchmarks.captioning_export_bench` end to end on the tiny captioner,
its test sample a few generated JPEG images: quality, the timings, and a
result file its performance page shows."""

import json

import numpy as np
import pytest
import tensorflow as tf

from benchmarks import captioning_export_bench
from benchmarks import pages
from release import build_zoo
from tests.support import tiny_bundles

IMAGES = 5


def _sample(name):
    """A stand-in test sample: random JPEG images, one reference each."""
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (IMAGES, 40, 40, 3), dtype=np.uint8)
    images = [tf.io.encode_jpeg(image).numpy() for image in pixels]
    return {"image": images}, [["a red square"]] * IMAGES


@pytest.mark.slow
def test_the_benchmark_scores_both_exports_then_times_them(
    shared, tmp_path, monkeypatch
):
    monkeypatch.setattr(build_zoo, "test_sample", _sample)
    export = tiny_bundles.tiny_export(shared, "captioning", False)
    argv = ["--model", export, "--repeats", "1", "--out", str(tmp_path)]
    captioning_export_bench.main(argv)
    path = tmp_path / "captioning_export_bench.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    result = document["result"]
    assert result["images"] == IMAGES
    quality = {row["export"]: row for row in result["quality"]}
    assert list(quality) == list(captioning_export_bench.EXPORTS)
    assert quality["float32"]["same captions"] == IMAGES
    for row in quality.values():
        assert 0 <= row["same captions"] <= IMAGES
        assert 0 <= row["bleu_4"] <= 100 and row["cider"] >= 0
    assert {(row["batch"], row["export"]) for row in result["rows"]} == {
        (batch, name)
        for batch in captioning_export_bench.BATCHES
        for name in captioning_export_bench.EXPORTS
    }
    for row in result["rows"]:
        assert row["ms per call"] > 0
    (topic,) = [
        t
        for t in pages.TOPICS
        if "captioning_export_bench" in [s.name for s in t.sections]
    ]
    backend = document["backend"]
    page = pages.page(topic, {(backend, "captioning_export_bench"): document})
    assert "same captions as float32" in page and "float32 XLA" in page


def test_calls_go_round_a_sample_smaller_than_the_batch():
    images = [b"a", b"b", b"c"]
    (call,) = captioning_export_bench._calls(images, 4)
    assert call.numpy().tolist() == [b"a", b"b", b"c", b"a"]
    calls = captioning_export_bench._calls(images, 1)
    assert [c.numpy().tolist() for c in calls] == [[b"a"], [b"b"], [b"c"]]
