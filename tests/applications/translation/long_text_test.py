"""Texts longer than the model reads: translated sentence by sentence, in
Python and in the export's graph (also in a fresh process without Keras),
a sentence still too long flagged `truncated`, and a huge text cut before
it is tokenized.

The translator is untrained (random weights): its translations are
arbitrary but deterministic strings of many tokens, which is all that
comparing two ways of translating the same sentences needs.
"""

import logging

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import registry
from attention_zoo_apps.translation import data
from attention_zoo_apps.translation import sentences
from attention_zoo_apps.translation.export import TranslationServingModule
from attention_zoo_apps.translation.translator import Translator
from tests.support import fresh_process

MAX_LENGTH = 12


@pytest.fixture(scope="module")
def translator(tokenized_pairs):
    _, (source, target) = tokenized_pairs
    config = registry.get("translation").tiny_config()
    assert config.max_length == MAX_LENGTH
    translator = Translator(config, source, target)
    translator.ensure_model()
    return translator


@pytest.fixture(scope="module")
def short(tokenized_pairs):
    """Three sentences that each fit, and together do not."""
    pairs, _ = tokenized_pairs
    return [source + "." for source, _ in pairs.pairs[:3]]


@pytest.fixture(scope="module")
def module(translator):
    return TranslationServingModule(translator, jit_compile=False)


def _tokens(translator, text):
    return int(translator.source_tokenizer.tokenize([text]).row_lengths()[0])


def _strings(tensor):
    return [t.decode("utf-8") for t in tensor.numpy()]


def _long_sentence(short):
    """One sentence (no inner punctuation) of more than MAX_LENGTH
    tokens."""
    return " ".join(s.rstrip(".") for s in short * 2) + "."


def _block_diagonal(maps):
    rows, columns = map(sum, zip(*(m.shape for m in maps)))
    joined = np.zeros((rows, columns), "float32")
    row = column = 0
    for block in maps:
        joined[row : row + block.shape[0], column : column + block.shape[1]] = (
            block
        )
        row, column = row + block.shape[0], column + block.shape[1]
    return joined


def test_three_sentences_translate_as_the_three_one_by_one(
    translator, module, short
):
    text = " ".join(short)
    assert all(_tokens(translator, s) <= MAX_LENGTH for s in short)
    assert _tokens(translator, text) > MAX_LENGTH
    alone, maps = translator.translate(short, return_attention=True)
    assert len(set(alone)) == 3 and all(alone)
    expected = " ".join(alone)
    (got,), (joined,), truncated = translator.translate(
        [text], return_attention=True, return_truncated=True
    )
    assert got == expected
    assert truncated == [False]
    np.testing.assert_allclose(joined, _block_diagonal(maps), atol=1e-6)
    # The export's graph, in a batch with a text read whole.
    served = module.serve(tf.constant([text, short[1]]))
    assert _strings(served["translation"]) == [expected, alone[1]]
    assert served["truncated"].numpy().tolist() == [False, False]
    attention = served["attention"].numpy()
    rows, columns = joined.shape
    assert attention.shape[1:] == (rows, columns)
    np.testing.assert_allclose(attention[0], joined, atol=1e-6)


def test_a_text_that_fits_reads_as_before(translator, module, short):
    """Read whole, exactly as before sentences were split: two short
    sentences together, one, an empty text."""
    texts = [short[0] + " " + short[1][:12], short[2], ""]
    assert _tokens(translator, texts[0]) <= MAX_LENGTH
    # Before: one decode of the texts' first MAX_LENGTH tokens.
    ids = data.encode_sources(
        translator.source_tokenizer, tf.constant(texts), MAX_LENGTH
    )
    result = translator.decode(ids, jit_compile=False)
    before = _strings(translator.target_tokenizer.detokenize(result["tokens"]))
    assert translator.translate(texts) == before
    served = module.serve(tf.constant(texts))
    assert _strings(served["translation"]) == before
    length = int(np.max(result["lengths"]))
    np.testing.assert_array_equal(
        served["attention"].numpy(), result["attention"][:, :length]
    )
    assert not served["truncated"].numpy().any()


def test_an_over_long_sentence_sets_truncated(
    translator, module, short, caplog
):
    sentence = _long_sentence(short)
    assert _tokens(translator, sentence) > MAX_LENGTH
    many = " ".join(short * 6)  # 18 sentences: 16 are read
    assert len(short) * 6 > sentences.MAX_SENTENCES
    texts = [short[0], sentence, many]
    served = module.serve(tf.constant(texts))
    assert served["truncated"].numpy().tolist() == [False, True, True]
    # What is read: the sentence's first MAX_LENGTH tokens, as before;
    # the first 16 sentences.
    ids = data.encode_sources(
        translator.source_tokenizer, tf.constant([sentence]), MAX_LENGTH
    )
    cut = translator.decode(ids, jit_compile=False)["tokens"]
    read = short * 5 + short[:1]
    assert _strings(served["translation"])[1:] == [
        translator.target_tokenizer.detokenize(cut)[0].numpy().decode(),
        " ".join(translator.translate(read)),
    ]
    with caplog.at_level(logging.WARNING):
        got = translator.translate(texts)
    assert got == _strings(served["translation"])
    assert "texts 1, 2 (0-based)" in caplog.text
    caplog.clear()
    _, flags = translator.translate(texts, return_truncated=True)
    assert flags == [False, True, True]
    assert not caplog.records  # returned, not logged


def test_a_huge_text_is_cut_before_it_is_tokenized(translator, module, short):
    huge = " ".join(short) + " " + "x" * 3_000_000
    first = " ".join(short) + " " + "x" * 500
    served = module.serve(tf.constant([huge, first]))
    assert served["truncated"].numpy().tolist() == [True, False]
    translation = _strings(served["translation"])
    assert translation[0].startswith(" ".join(translator.translate(short)))
    # The huge word is one [UNK] either way: the same sentences are read.
    assert translation[0] == translation[1]
    limits = translator.input_limits()
    assert limits["sentences"] == sentences.MAX_SENTENCES
    assert len(first) < limits["text_characters"] < len(huge)


def test_the_n_best_of_a_split_text_join_each_sentences_ranks(
    translator, short
):
    search = {"beam_size": 3, "num_results": 2}
    n_best, scores = translator.translate(short, return_scores=True, **search)
    expected = [" ".join(ranks) for ranks in zip(*n_best)]
    (got,), (summed,) = translator.translate(
        [" ".join(short)], return_scores=True, **search
    )
    assert got == expected
    np.testing.assert_allclose(summed, np.sum(scores, axis=0), rtol=1e-6)
    module = TranslationServingModule(translator, jit_compile=False, **search)
    served = module.serve(tf.constant([" ".join(short)]))
    assert _strings(served["translations"][0]) == got
    np.testing.assert_allclose(served["scores"][0], summed, rtol=1e-5)
    assert _strings(served["translation"]) == [got[0]]


def test_a_sampled_split_text_draws_each_sentence_with_its_seed(
    translator, short
):
    sampling = {"sampling": "temperature", "temperature": 2.0}
    alone = translator.translate(short, seed=[7, 8, 9], **sampling)
    text = " ".join(short)
    assert translator.translate([text], seed=[7], **sampling) == [
        " ".join(alone)
    ]
    module = TranslationServingModule(translator, jit_compile=False, **sampling)
    served = module.seeded(tf.constant([text]), tf.constant([7], tf.int64))
    assert _strings(served["translation"]) == [" ".join(alone)]
    with pytest.raises(ValueError, match="one seed per text"):
        translator.translate([text, text], seed=[1], **sampling)


def test_the_export_splits_in_a_fresh_process_and_the_command_warns(
    translator, short, tmp_path, capsys
):
    from attention_zoo_apps import cli

    path = str(tmp_path / "translation" / "1")
    translator.export(path, jit_compile=False)
    texts = [" ".join(short), _long_sentence(short), short[0]]
    expected, truncated = translator.translate(texts, return_truncated=True)
    served = fresh_process.run_without_project(
        f"""
serve = tf.saved_model.load({path!r}).signatures["serving_default"]
out = serve(text=tf.constant({texts!r}))
emit({{
    "translation": [t.decode("utf-8") for t in out["translation"].numpy()],
    "truncated": out["truncated"].numpy().tolist(),
}})
"""
    )
    assert served == {"translation": expected, "truncated": truncated}
    assert truncated == [False, True, False]
    assert cli.main(["translate", str(tmp_path / "translation"), *texts]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-3:] == [
        f"{t}\t{e}" for t, e in zip(texts, expected)
    ]
    (warning,) = [x for x in captured.err.splitlines() if "warning:" in x]
    assert warning.startswith("attention-zoo translate: warning: text 2: ")
    assert f"longer than {MAX_LENGTH} tokens" in warning
