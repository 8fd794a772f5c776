"""Translator end to end on the synthetic pair: fit, translate, export."""

import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import registry
from attention_zoo_apps.translation.config import TranslationConfig
from attention_zoo_apps.translation.translator import Translator
from tests.support import fresh_process
from tests.support.resume_checks import check_fit_resumes

TINY = registry.get("translation").tiny_config()


@pytest.fixture(scope="module")
def translators(tiny_rnn, synthetic):
    """The tiny RNN translator (trained once per session, `tiny_rnn`) and
    a tiny Transformer trained on the same pairs: `{"rnn": ...,
    "transformer": ...}`."""
    transformer = Translator(
        TINY.replace(
            model="transformer",
            model_dim=16,
            num_heads=2,
            feed_forward_dim=32,
            num_layers=1,
        )
    )
    # No validation set: no test here reads the fit's validation loss
    # (evaluating is `test_evaluate_*`'s), and it costs a second trace.
    transformer.fit(synthetic.pairs[:256], None, verbose=0)
    return {
        "rnn": Translator.load(tiny_rnn / "bundle"),
        "transformer": transformer,
    }


@pytest.fixture(scope="module", params=["rnn", "transformer"])
def model_name(request):
    return request.param


@pytest.fixture(scope="module")
def translator(model_name, translators):
    return translators[model_name]


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="model"):
        TranslationConfig(model="lstm")
    with pytest.raises(ValueError, match="units"):
        TranslationConfig(units=0)
    with pytest.raises(ValueError, match="attention"):
        TranslationConfig(attention="cosine")


@pytest.mark.parametrize("attention", [None, "monotonic", "local"])
def test_config_json_round_trip(attention):
    config = TINY.replace(attention=attention)
    assert TranslationConfig.from_json(config.to_json()) == config


def test_translate_returns_strings_and_attention(translator, synthetic):
    texts = [source for source, _ in synthetic.pairs[:3]]
    translations, maps = translator.translate(texts, return_attention=True)
    assert len(translations) == 3
    assert all(isinstance(t, str) for t in translations)
    for weights in maps:
        assert weights.ndim == 2 and np.all(np.isfinite(weights))
        # Each generated step's weights sum to one over the source.
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-4)
    assert translator.translate([]) == []
    with pytest.raises(TypeError):
        translator.translate("a single string")


def test_beam_one_equals_greedy(translator, synthetic):
    texts = [source for source, _ in synthetic.pairs[:4]]
    greedy = translator.translate(texts, beam_size=1)
    source_ids = translator.source_ids(texts)
    beam = translator.decode(source_ids, beam_size=1)
    wide = translator.translate(texts, beam_size=3)
    assert len(wide) == 4
    assert translator.target_tokenizer.detokenize(
        beam["tokens"]
    ).numpy().tolist() == [g.encode() for g in greedy]


@pytest.mark.parametrize("beam_size", [1, 2])
def test_bucket_padding_does_not_change_results(
    translator, synthetic, beam_size
):
    # A batch of 3 is padded to 4 rows and its length to a multiple of 8;
    # each text alone gets other padding. Results must not depend on it.
    texts = [source for source, _ in synthetic.pairs[:3]]
    texts[1] = " ".join([texts[1]] * 2)  # a longer source, another bucket

    def decode(source_ids):
        return translator.decode(source_ids, beam_size=beam_size)

    source_ids = translator.source_ids(texts)
    together = decode(source_ids)
    assert together["tokens"].shape[0] == 3
    assert together["attention"].shape[-1] == source_ids.shape[1]
    for i, text in enumerate(texts):
        alone = decode(translator.source_ids([text]))
        length = int(alone["lengths"][0])
        width = alone["attention"].shape[-1]
        assert int(together["lengths"][i]) == length
        np.testing.assert_array_equal(
            together["tokens"][i, :length], alone["tokens"][0, :length]
        )
        np.testing.assert_allclose(
            together["scores"][i], alone["scores"][0], rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            together["attention"][i, :length, :width],
            alone["attention"][0, :length],
            atol=1e-5,
        )
        # The padding of the shorter sources gets no attention.
        assert np.all(together["attention"][i, :length, width:] == 0)


def test_xla_and_graph_decoding_agree(translator, synthetic):
    source_ids = translator.source_ids([s for s, _ in synthetic.pairs[:3]])
    xla = translator.decode(source_ids, beam_size=2)
    graph = translator.decode(source_ids, beam_size=2, jit_compile=False)
    np.testing.assert_array_equal(xla["tokens"], graph["tokens"])
    np.testing.assert_allclose(xla["scores"], graph["scores"], atol=1e-4)


def test_empty_sources_give_empty_translations(translator, synthetic):
    texts = ["", synthetic.pairs[0][0], "   "]
    result = translator.decode(translator.source_ids(texts), beam_size=2)
    np.testing.assert_array_equal(result["lengths"].numpy()[[0, 2]], 0)
    assert np.all(result["tokens"].numpy()[[0, 2]] == 0)
    np.testing.assert_array_equal(result["scores"].numpy()[[0, 2]], 0.0)
    assert np.all(result["attention"].numpy()[[0, 2]] == 0)
    assert int(result["lengths"][1]) > 0
    assert translator.translate(texts)[0] == ""


def _traces(translator, monkeypatch):
    """The shapes the decoder's `encode` sees from now on: one per trace
    (the compiled searches run it only while tracing)."""
    adapter, seen = translator.adapter, []
    encode = adapter.encode

    def counting(source_ids):
        seen.append(tuple(source_ids.shape))
        return encode(source_ids)

    monkeypatch.setattr(adapter, "encode", counting)
    return seen


def test_num_results_gives_the_best_beams_with_scores_and_alignments(
    translator, synthetic, monkeypatch
):
    texts = [source for source, _ in synthetic.pairs[:3]] + [""]
    search = {"beam_size": 3, "coverage_penalty": 0.5}
    traces = _traces(translator, monkeypatch)
    best, best_maps = translator.translate(
        texts, return_attention=True, **search
    )
    found, maps, scores = translator.translate(
        texts,
        num_results=3,
        return_attention=True,
        return_scores=True,
        **search,
    )
    assert [f[0] for f in found] == best and found[3] == ["", "", ""]
    source_ids = translator.source_ids(texts).numpy()
    for i in range(3):
        assert len(found[i]) == len(maps[i]) == len(scores[i]) == 3
        np.testing.assert_array_equal(maps[i][0], best_maps[i])
        for weights in maps[i]:
            assert weights.shape[1] == np.sum(source_ids[i] != 0)
            np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-4)
    assert scores[3] == [0.0, 0.0, 0.0]
    result = translator.decode(
        translator.source_ids(texts), num_results=3, **search
    )
    np.testing.assert_allclose(scores, result["scores"], atol=1e-5)
    ranked = result["normalized_scores"].numpy()
    assert (np.diff(ranked[:3], axis=1) <= 0).all()  # best first
    two = translator.translate(texts, num_results=2, **search)
    assert two == [f[:2] for f in found]
    assert len(traces) == 1  # one bucket and configuration: traced once
    with pytest.raises(ValueError, match="num_results=4, beam_size=3"):
        translator.translate(texts, beam_size=3, num_results=4)


def test_sampling_repeats_per_seed_and_cold_sampling_is_greedy(
    translator, synthetic
):
    texts = [source for source, _ in synthetic.pairs[:4]]
    nucleus = {"sampling": "top_p", "top_p": 0.9, "temperature": 0.8}
    first = translator.translate(texts, seed=3, **nucleus)
    assert translator.translate(texts, seed=3, **nucleus) == first
    greedy = translator.translate(texts)
    cold = translator.translate(texts, sampling="top_k", top_k=5, temperature=0)
    assert cold == greedy
    hot = {
        tuple(
            translator.translate(
                texts, sampling="temperature", temperature=3.0, seed=seed
            )
        )
        for seed in range(4)
    }
    assert len(hot) > 1
    with pytest.raises(ValueError, match="beam_size=2"):
        translator.translate(texts, beam_size=2, sampling="top_k", top_k=2)


def test_the_export_module_searches_with_the_coverage_penalty(
    translator, synthetic
):
    from attention_zoo_apps.translation.export import TranslationServingModule

    texts = [source for source, _ in synthetic.pairs[:3]]
    module = TranslationServingModule(
        translator, beam_size=3, coverage_penalty=0.5
    )
    served = module.serve(tf.constant(texts))["translation"].numpy()
    expected = translator.translate(texts, beam_size=3, coverage_penalty=0.5)
    assert [s.decode("utf-8") for s in served] == expected


def test_the_export_module_returns_the_n_best_with_their_scores(
    translator, synthetic
):
    from attention_zoo_apps.translation.export import TranslationServingModule

    texts = [source for source, _ in synthetic.pairs[:3]] + [""]
    module = TranslationServingModule(translator, beam_size=3, num_results=3)
    served = module.serve(tf.constant(texts))
    n_best, scores = translator.translate(
        texts, beam_size=3, num_results=3, return_scores=True
    )
    got = [
        [t.decode("utf-8") for t in row]
        for row in served["translations"].numpy()
    ]
    assert got == n_best
    np.testing.assert_allclose(served["scores"].numpy(), scores, atol=1e-5)
    # `translation` and `attention` are the best hypothesis's, as with
    # `num_results=1`.
    single = TranslationServingModule(translator, beam_size=3)
    alone = single.serve(tf.constant(texts))
    assert list(served["translation"].numpy()) == list(
        alone["translation"].numpy()
    )
    np.testing.assert_allclose(
        served["attention"].numpy(), alone["attention"].numpy(), atol=1e-6
    )
    assert [row[0] for row in got] == [
        t.decode("utf-8") for t in served["translation"].numpy()
    ]
    assert set(alone) == {"translation", "attention", "truncated"}


def test_a_search_object_translates_and_exports_as_its_aliases(
    translator, synthetic
):
    from attention_zoo.decoding import BeamSearch
    from attention_zoo_apps.translation.export import TranslationServingModule

    texts = [source for source, _ in synthetic.pairs[:3]]
    search = BeamSearch(beam_size=3, coverage_penalty=0.5)  # penalty 0.6
    loose = translator.translate(texts, beam_size=3, coverage_penalty=0.5)
    assert translator.translate(texts, search=search) == loose
    assert translator.translate(texts, search="greedy") == translator.translate(
        texts
    )
    module = TranslationServingModule(translator, search=search)
    served = module.serve(tf.constant(texts))["translation"].numpy()
    assert [s.decode("utf-8") for s in served] == loose
    assert (
        module.decoding_options()
        == TranslationServingModule(
            translator, beam_size=3, coverage_penalty=0.5
        ).decoding_options()
    )
    with pytest.raises(ValueError, match="not both"):
        translator.translate(texts, search=search, beam_size=3)


def test_evaluating_many_batches_never_retraces(translator, synthetic, caplog):
    pairs = synthetic.pairs[256:300]
    texts = [source for source, _ in pairs]
    with caplog.at_level(logging.WARNING):
        for size in (1, 2, 3, 5, 9, 17):  # six batch buckets
            translator.translate(texts[:size])
        translator.evaluate(pairs, batch_size=7)
    # TensorFlow warns "N out of the last M calls ... triggered
    # tf.function retracing" when a decoder is traced again and again.
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]


def test_evaluate_reports_bleu_and_chrf(translator, synthetic):
    scores = translator.evaluate(synthetic.pairs[256:266])
    assert 0.0 <= scores["bleu"] <= 100.0 and 0.0 <= scores["chrf"] <= 100.0
    assert scores["examples"] == 10


def test_evaluate_scores_cased_and_labels_lower_cased(translator, monkeypatch):
    pairs = [
        ("a", "Der Hund läuft schnell nach Hause."),
        ("b", "Die Katze schläft auf dem Sofa."),
    ]
    lowered = {source: target.lower() for source, target in pairs}
    monkeypatch.setattr(
        translator,
        "translate",
        lambda sources, *args: [lowered[s] for s in sources],
    )
    scores = translator.evaluate(pairs)
    # A perfect lower-cased output: cased scores lose the capitals, the
    # lower-cased ones (both sides lower-cased) are perfect.
    assert scores["bleu_lowercase"] == pytest.approx(100.0)
    assert scores["chrf_lowercase"] == pytest.approx(100.0)
    assert scores["bleu"] < 60.0 and scores["chrf"] < 95.0
    assert "case:mixed" in scores["bleu_signature"]


def test_save_and_load_translate_alike(translator, synthetic, tmp_path):
    texts = [source for source, _ in synthetic.pairs[:4]]
    translator.save(tmp_path)
    loaded = Translator.load(tmp_path)
    assert loaded.translate(texts) == translator.translate(texts)


# What `served` exports and serves: the plain exports' texts, the n-best
# exports' texts and search, and the texts of the monotonic and local
# translators' exports.
SERVED_TEXTS = 5
N_BEST_TEXTS = 3
N_BEST_SEARCH = {"beam_size": 3, "coverage_penalty": 0.5}
ATTENTIONS = ["monotonic", "local"]


def _attention_texts(synthetic):
    return [source for source, _ in synthetic.pairs[:3]] + [""]


@pytest.fixture(scope="module")
def attention_translators(synthetic):
    """Tiny RNN translators with monotonic and local attention, trained
    on 128 pairs without a validation set: `{"monotonic": ..., "local":
    ...}`."""
    translators = {}
    for attention in ATTENTIONS:
        keras.utils.set_random_seed(0)
        translator = Translator(TINY.replace(attention=attention))
        translator.fit(synthetic.pairs[:128], None, verbose=0)
        translators[attention] = translator
    return translators


@pytest.fixture(scope="module")
def all_exports(translators, attention_translators, tiny_rnn, tmp_path_factory):
    """Every export of this module, by name, read-only: `rnn` and
    `transformer` as they serve by default (the RNN's is `tiny_rnn`'s),
    `rnn_n_best` and `transformer_n_best` with the 3 best translations,
    `monotonic` and `local`."""
    folder = tmp_path_factory.mktemp("exports")
    paths = {"rnn": str(tiny_rnn / "translation" / "1")}
    for name, translator in translators.items():
        if name not in paths:
            paths[name] = str(folder / name / "1")
            translator.export(paths[name])
        paths[f"{name}_n_best"] = str(folder / f"{name}_n_best" / "1")
        translator.export(
            paths[f"{name}_n_best"], num_results=3, **N_BEST_SEARCH
        )
    for attention, translator in attention_translators.items():
        paths[attention] = str(folder / attention / "1")
        translator.export(paths[attention])
    return paths


@pytest.fixture(scope="module")
def exports(model_name, all_exports):
    """`(plain, n_best)`: the translator's exports."""
    return all_exports[model_name], all_exports[f"{model_name}_n_best"]


@pytest.fixture(scope="module")
def served(all_exports, synthetic):
    """What one fresh process without Keras or the project answers from
    `all_exports` (as TF Serving would), by export name; which of each
    export's ops neither TensorFlow nor tensorflow-text registers
    (`unknown_ops`); and what `saved_model_cli show --all` prints of the
    plain exports there (`cli`)."""
    texts = [source for source, _ in synthetic.pairs[:SERVED_TEXTS]] + [""]
    n_best_texts = [s for s, _ in synthetic.pairs[:N_BEST_TEXTS]] + [""]
    ops = {
        name: sorted(fresh_process.saved_model_ops(path))
        for name, path in all_exports.items()
    }
    return fresh_process.run_without_project(
        f"""
import contextlib
import io

from tensorflow.python.tools import saved_model_cli

exports = {all_exports!r}

def strings(tensor):
    return [t.decode("utf-8") for t in tensor.numpy()]

result = {{"cli": {{}}}}
for name in ("rnn", "transformer"):
    serve = tf.saved_model.load(exports[name]).signatures["serving_default"]
    out = serve(text=tf.constant({texts!r}))
    result[name] = {{
        "translation": strings(out["translation"]),
        "attention_shape": list(out["attention"].shape),
        "attention_dtype": out["attention"].dtype.name,
        "inputs": sorted(serve.structured_input_signature[1]),
    }}
    n_best = exports[name + "_n_best"]
    serve = tf.saved_model.load(n_best).signatures["serving_default"]
    out = serve(text=tf.constant({n_best_texts!r}))
    result[name + "_n_best"] = {{
        "translations": [
            [t.decode("utf-8") for t in row]
            for row in out["translations"].numpy()
        ],
        "translation": strings(out["translation"]),
        "scores": out["scores"].numpy().tolist(),
        "outputs": sorted(out),
    }}
    # The `saved_model_cli` console script: its `main` on these argv.
    sys.argv = ["saved_model_cli", "show", "--all", "--dir", exports[name]]
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        try:
            saved_model_cli.main()
        except SystemExit as exit:
            assert not exit.code, exit.code
    result["cli"][name] = shown.getvalue()
for name in {ATTENTIONS!r}:
    serve = tf.saved_model.load(exports[name]).signatures["serving_default"]
    out = serve(text=tf.constant({_attention_texts(synthetic)!r}))
    result[name] = strings(out["translation"])
ops = {ops!r}
result["unknown_ops"] = {{
    name: unregistered_ops(names) for name, names in ops.items()
}}
emit(result)
""",
        timeout=600,
    )


@pytest.mark.slow
def test_export_serves_the_same_translations_without_the_project(
    translator, model_name, synthetic, served
):
    texts = [source for source, _ in synthetic.pairs[:SERVED_TEXTS]] + [""]
    expected, maps = translator.translate(texts, return_attention=True)
    served = served[model_name]
    assert served["translation"] == expected
    assert served["inputs"] == ["text"]
    assert served["attention_dtype"] == "float32"
    assert served["attention_shape"][0] == len(texts)
    assert served["attention_shape"][1] == max(len(m) for m in maps)


@pytest.mark.slow
def test_n_best_export_serves_without_the_project(
    translator, model_name, synthetic, served
):
    texts = [source for source, _ in synthetic.pairs[:N_BEST_TEXTS]] + [""]
    n_best, scores = translator.translate(
        texts, num_results=3, return_scores=True, **N_BEST_SEARCH
    )
    served = served[f"{model_name}_n_best"]
    assert served["translations"] == n_best
    assert served["translation"] == [row[0] for row in n_best]
    np.testing.assert_allclose(served["scores"], scores, atol=1e-5)
    assert served["outputs"] == [
        "attention",
        "scores",
        "translation",
        "translations",
        "truncated",
    ]


@pytest.mark.slow
def test_exported_graph_uses_only_tensorflow_and_text_ops(
    model_name, exports, served
):
    for path in exports:
        assert "GatherTree" not in fresh_process.saved_model_ops(path)
    unknown = sorted(
        set(served["unknown_ops"][model_name])
        | set(served["unknown_ops"][f"{model_name}_n_best"])
    )
    assert not unknown, f"ops outside TensorFlow and TF Text: {unknown}"


@pytest.mark.slow
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_monotonic_and_local_attention_translate_save_and_export(
    attention, attention_translators, served, synthetic, tmp_path
):
    translator = attention_translators[attention]
    texts = _attention_texts(synthetic)
    expected, maps = translator.translate(texts, return_attention=True)
    for weights in maps[:3]:
        # At most one per step: monotonic may stop nowhere, local-p's
        # Gaussian is not renormalised.
        assert np.all(np.isfinite(weights))
        assert np.all(weights.sum(-1) <= 1 + 1e-5)
    assert len(translator.translate(texts, beam_size=3)) == 4
    translator.save(tmp_path / "saved")
    assert Translator.load(tmp_path / "saved").translate(texts) == expected
    # Exported (`all_exports`) and served in `served`'s fresh process.
    assert served[attention] == expected
    unknown = served["unknown_ops"][attention]
    assert not unknown, f"ops outside TensorFlow and TF Text: {unknown}"


@pytest.mark.slow
def test_reexport_never_replaces_and_failure_leaves_nothing(
    translator, exports, tmp_path, monkeypatch
):
    path = exports[0]
    first = sorted(os.listdir(path))
    with pytest.raises(FileExistsError, match="never replaced"):
        translator.export(path)  # TF Serving's versions do not change
    assert sorted(os.listdir(path)) == first
    assert os.listdir(os.path.dirname(path)) == ["1"]  # no temporary left

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(tf.saved_model, "save", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        translator.export(str(tmp_path / "3"))
    assert sorted(os.listdir(path)) == first
    assert os.listdir(tmp_path) == []  # no temporary left


@pytest.mark.slow
def test_saved_model_cli_lists_the_signature(model_name, served):
    # Run in `served`'s fresh process, on the plain export.
    shown = served["cli"][model_name]
    assert "signature_def['serving_default']" in shown
    assert "inputs['text']" in shown and "DT_STRING" in shown
    assert "outputs['translation']" in shown
    assert "outputs['attention']" in shown and "DT_FLOAT" in shown


# Slow tier; the quick twin resumes an interrupted entailment run through
# the same run folder code (run_folder_faults_test).
@pytest.mark.slow
def test_interrupted_fit_resumes_from_its_last_epoch(synthetic, tmp_path):
    first, resumed = check_fit_resumes(
        lambda: Translator(TINY),
        Translator.load_assets,
        synthetic.pairs[:128],
        str(tmp_path / "run"),
    )
    assert (
        resumed.source_tokenizer.vocabulary == first.source_tokenizer.vocabulary
    )
