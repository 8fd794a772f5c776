"""`benchmarks.translation_serving_cost` end to end on the tiny
translator, given once as an export and once as a folder `Translator.save`
wrote: sizes, quality and timings of both models' exports, in a result
file its performance page shows."""

import json
import os

import numpy as np
import pytest

from benchmarks import pages
from benchmarks import translation_serving_cost
from tests.support import tiny_bundles


@pytest.mark.slow
def test_two_models_are_sized_scored_and_timed_side_by_side(shared, tmp_path):
    export = tiny_bundles.tiny_export(shared, "translation", False)
    saved = tmp_path / "saved"
    exported = translation_serving_cost.load_translator(export)
    exported.save(str(saved))
    reloaded = translation_serving_cost.load_translator(str(saved))
    for mine, theirs in zip(
        exported.model.get_weights(), reloaded.model.get_weights()
    ):
        np.testing.assert_array_equal(mine, theirs)
    argv = ["--models", export, str(saved), "--synthetic", "--pairs", "40"]
    argv += ["--beam-size", "1", "2", "--repeats", "1"]
    out = tmp_path / "out"
    translation_serving_cost.main(argv + ["--out", str(out)])
    with open(out / "translation_serving_cost.json", encoding="utf-8") as file:
        document = json.load(file)
    result = document["result"]
    assert result["sentences"] == 40
    first, second = result["models"]
    assert first["parameters"] == second["parameters"] > 0
    assert first["export MB"] > 0
    named = "/".join(export.rstrip(os.sep).split(os.sep)[-2:])
    greedy, beam = result["searches"]
    assert (greedy["search"], beam["search"]) == ("greedy", "beam 2, lp 0.6")
    for searched in (greedy, beam):
        exports = [row["export"] for row in searched["quality"]]
        # A version folder is named by its model's folder and version.
        assert len(exports) == 4 and exports[0] == f"{named} (rnn), graph"
        for row in searched["quality"]:
            # The same weights and search: every export translates alike.
            assert row["same translations"] == 40, row
        quality = searched["quality"]
        assert quality[0]["bleu"] == quality[2]["bleu"]
        assert {(row["batch"], row["export"]) for row in searched["rows"]} == {
            (batch, name)
            for batch in translation_serving_cost.BATCHES
            for name in exports
        }
        for row in searched["rows"]:
            assert row["ms per sentence"] == pytest.approx(
                row["ms per call"] / row["batch"], abs=0.01
            )
    (topic,) = [
        t
        for t in pages.TOPICS
        if "translation_serving_cost" in [s.name for s in t.sections]
    ]
    backend = document["backend"]
    page = pages.page(topic, {(backend, "translation_serving_cost"): document})
    assert "same translations as its graph export" in page
    assert "greedy search" in page and "beam 2, lp 0.6 search" in page
    assert "ms per sentence" in page and exports[3] in page
