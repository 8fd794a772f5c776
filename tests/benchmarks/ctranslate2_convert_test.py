"""`benchmarks.ctranslate2_convert`: a Transformer translator converted to
CTranslate2 translates as ours does, token for token (greedy, float32,
the same log-probabilities to 1e-4), with grouped-query heads, learned
positions, tied embeddings and a shallow decoder too; its int8 weights,
converted from a saved bundle by the command line, load and translate;
and what the spec cannot express is refused in one line, before anything
is written."""

import json
import os

import ctranslate2
import numpy as np
import pytest

from attention_zoo.export import int8
from attention_zoo_apps.translation.config import TranslationConfig
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator
from benchmarks import ctranslate2_bench
from benchmarks import ctranslate2_compare
from benchmarks import ctranslate2_convert
from benchmarks import pages

TINY = dict(
    model="transformer",
    model_dim=16,
    num_heads=2,
    feed_forward_dim=32,
    num_layers=2,
    source_vocabulary_size=200,
    target_vocabulary_size=200,
    max_length=12,
)
PAIRS = make_synthetic_pairs(300, seed=0).pairs
# Sources the model did not train on.
TEXTS = [source for source, _ in make_synthetic_pairs(50, seed=1).pairs]


@pytest.fixture(scope="module")
def trained():
    """Three epochs of 10 steps: translations of several lengths that end
    with END (untrained, every row runs to the step limit). One layer
    each side, to compile its training step in half the time; the
    untrained translators below have two."""
    config = TranslationConfig(**TINY).replace(
        num_layers=1,
        epochs=3,
        batch_size=32,
        learning_rate=1e-2,
        dropout=0.0,
    )
    translator = Translator(config)
    translator.fit(PAIRS, verbose=0)
    return translator


def _untrained(**changes):
    """A translator with its vocabularies and fresh (seeded) weights."""
    translator = Translator(TranslationConfig(**{**TINY, **changes}))
    translator.ensure_vocabularies(PAIRS)
    translator.build()
    return translator


def _check_same(found):
    """The rows' tokens are the same, and so are their scores. Rounding
    (CTranslate2's matmuls are not TensorFlow's) could swap two tokens of
    near-equal logits; 0 of 50 rows differ here, 2 are allowed."""
    assert len(found["differ"]) <= 2, found["differ"]
    same = [i for i in range(len(found["ours"])) if i not in found["differ"]]
    np.testing.assert_allclose(
        np.array(found["their_scores"])[same],
        np.array(found["our_scores"])[same],
        atol=1e-4,
    )


def test_float32_translations_are_ours_token_for_token(trained, tmp_path):
    folder = ctranslate2_convert.convert(trained, str(tmp_path / "ct2"))
    with open(os.path.join(folder, "config.json")) as file:
        config = json.load(file)
    assert config["bos_token"] == config["decoder_start_token"] == "[START]"
    assert (config["eos_token"], config["unk_token"]) == ("[END]", "[UNK]")
    assert config["layer_norm_epsilon"] == 1e-5

    sources = trained.source_ids(TEXTS)
    found = ctranslate2_compare.compare(
        folder, trained, sources, jit_compile=False
    )
    lengths = [len(ids) for ids in found["ours"]]
    assert len(set(lengths)) >= 3 and max(lengths) < 13  # END, not the limit
    _check_same(found)


def test_grouped_query_learned_positions_tied_logits_shallow_decoder(
    tmp_path,
):
    translator = _untrained(
        num_heads=4,
        num_key_value_heads=2,
        positions="learned",
        tie_embeddings=True,
        decoder_layers=1,  # two encoder blocks, one decoder block
    )
    folder = ctranslate2_convert.convert(translator, str(tmp_path))
    sources = translator.source_ids(TEXTS[:20])
    found = ctranslate2_compare.compare(
        folder, translator, sources, jit_compile=False
    )
    # Untrained, the rows run to the limit: every learned position is read.
    assert {len(ids) for ids in found["ours"]} == {13}
    _check_same(found)


def test_the_command_line_writes_int8_weights_that_translate(
    trained, tmp_path, capsys
):
    bundle = str(tmp_path / "bundle")
    trained.save(bundle)
    out = str(tmp_path / "int8")
    ctranslate2_convert.main([bundle, out, "--quantization", "int8"])
    assert capsys.readouterr().out.strip() == out
    full = ctranslate2_convert.convert(trained, str(tmp_path / "float32"))
    size = os.path.getsize(os.path.join(out, "model.bin"))
    assert size < 0.7 * os.path.getsize(os.path.join(full, "model.bin"))

    model = ctranslate2.Translator(out, device="cpu")
    sources = trained.source_ids(TEXTS)
    ids, scores = ctranslate2_compare.translate_ids(model, trained, sources)
    ours, _ = ctranslate2_compare.our_ids(trained, sources, jit_compile=False)
    vocabulary_size = len(trained.target_tokenizer.vocabulary)
    assert all(0 <= i < vocabulary_size for row in ids for i in row)
    assert all(len(row) <= 13 for row in ids) and all(s < 0 for s in scores)
    # Rounded weights, mostly the same translations, where the CPU has
    # int8 dot products (VNNI). Without them CTranslate2's int8 GEMM
    # (AVX2's saturating 16-bit pair sums) agreed with ours on 0 of 50
    # rows on an AVX2 AMD EPYC: valid ids and scores, as checked above.
    if _has_vnni():
        assert sum(a == b for a, b in zip(ids, ours)) >= 35


def _has_vnni():
    with open("/proc/cpuinfo") as file:
        flags = file.read()
    return any(flag in flags for flag in ("avx512_vnni", "avx_vnni", "amx"))


@pytest.mark.parametrize(
    "changes, words",
    [
        (dict(sliding_window=4), "sliding_window=4"),
        (dict(use_gate=True), "use_gate=True"),
        (dict(model="rnn"), "model='rnn'"),
    ],
    ids=["window", "gate", "rnn"],
)
def test_what_the_spec_cannot_express_is_refused(changes, words, tmp_path):
    if changes.get("model") == "rnn":  # refused before the model is read
        translator = Translator(TranslationConfig(**{**TINY, **changes}))
    else:
        translator = _untrained(**changes)
    with pytest.raises(ValueError) as refused:
        ctranslate2_convert.convert(translator, str(tmp_path / "out"))
    message = str(refused.value)
    assert words in message and "\n" not in message
    assert not os.path.exists(tmp_path / "out")


def test_an_unknown_quantization_is_refused(tmp_path):
    with pytest.raises(ValueError, match="quantization='int3'"):
        ctranslate2_convert.convert(None, str(tmp_path), "int3")


def test_our_int8_export_is_left_out_where_the_cpu_cannot_run_it(
    monkeypatch, capsys
):
    if int8.int8_available():
        assert ctranslate2_bench.ours() == ctranslate2_bench.OURS
    monkeypatch.setattr(int8, "int8_available", lambda: False)
    capsys.readouterr()
    assert list(ctranslate2_bench.ours()) == [
        "ours, float32 export",
        "ours, float32 XLA export",
    ]
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("ours, int8 export: left out") and "CPU" in line


def _expected_candidates():
    """The benchmark's candidates on this CPU: ours less the int8 export
    where TensorFlow cannot run it, then CTranslate2's."""
    dropped = () if int8.int8_available() else ("ours, int8 export",)
    return [c for c in ctranslate2_bench.CANDIDATES if c not in dropped]


@pytest.mark.slow
def test_the_benchmark_counts_same_outputs_then_times_all(
    trained, tmp_path, monkeypatch
):
    # The tiny model's Dense layers are all below the int8 export's size.
    monkeypatch.setattr(int8, "MIN_KERNEL_SIZE", 1)
    bundle = str(tmp_path / "bundle")
    trained.save(bundle)
    out = tmp_path / "out"
    argv = [bundle, "--synthetic", "--pairs", "4", "--repeats", "1"]
    ctranslate2_bench.main(argv + ["--out", str(out)])
    with open(out / "ctranslate2_bench.json", encoding="utf-8") as file:
        document = json.load(file)
    result = document["result"]
    assert result["sentences"] == 4
    same = result["same"]
    candidates = _expected_candidates()
    assert list(same) == candidates[1:]
    assert same["CTranslate2 float32"] >= 3
    assert same["ours, float32 XLA export"] >= 3
    assert all(0 <= count <= 4 for count in same.values())
    measured = {
        (row["threads"], row["batch"], row["candidate"])
        for row in result["rows"]
    }
    assert measured == {
        (threads, batch, candidate)
        for threads in ctranslate2_bench.THREADS
        for batch in ctranslate2_bench.BATCHES
        for candidate in candidates
    }
    assert all(row["ms per call"] > 0 for row in result["rows"])
    # Its section of the serving page shows both tables.
    (topic,) = [t for t in pages.TOPICS if t.slug == "serving"]
    name = "ctranslate2_bench"
    page = pages.page(topic, {(document["backend"], name): document})
    section = page.split(f"## `{name}`")[1].split("\n## ")[0]
    assert "same translations as ours, float32" in section
    assert "| 2 | 32 | CTranslate2 int8 |" in section
