"""Placeholders: which source words are protected, that a training
pair's copied words share a placeholder, that translations get the words
back, and that a translator trained with them copies numbers and names
it never saw, in `translate` and in its export alike."""

import re
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import registry
from attention_zoo_apps.common.wordpiece import RESERVED_TOKENS
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.translation import flags
from attention_zoo_apps.translation import placeholders
from attention_zoo_apps.translation import train
from attention_zoo_apps.translation.config import TranslationConfig
from attention_zoo_apps.translation.placeholders import SLOTS
from attention_zoo_apps.translation.placeholders import Placeholders
from attention_zoo_apps.translation.placeholders import placeholder
from attention_zoo_apps.translation.translator import Translator

SOURCE_WORDS = [
    "Mi", "amiga", "vive", "en", "desde", "Tom", "y", "el", "café",
    "por", "la", "mañana", "¿", "?", ".", ",", "Dónde", "está", "gatos",
    "tengo", "Mar", "##ía", "B", "##uenos", "Air", "##es", "2", "##0",
    "##1", "##5", "1", "3", "5", "8",
]  # fmt: skip
TARGET_WORDS = [
    "My", "friend", "lives", "in", "since", "Tom", "and", "Mary", "Where",
    "is", "?", ".", ",", "I", "have", "cats", "coffee", "2", "##0",
]  # fmt: skip


def _tokenizer(words):
    vocabulary = list(RESERVED_TOKENS) + words
    return placeholders.with_placeholders(
        SubwordTokenizer(vocabulary, lowercase=False)
    )


@pytest.fixture(scope="module")
def placed():
    source, target = _tokenizer(SOURCE_WORDS), _tokenizer(TARGET_WORDS)
    return Placeholders(source, target)


def _reference_protected(sentence, tokenizer, rules):
    """The words of `sentence` the rules protect, in plain Python (its
    words split on spaces: the sentences below put spaces around their
    punctuation)."""
    words = sentence.split()
    protected = []
    for position, word in enumerate(words):
        pieces = tokenizer.tokenize([word])[0].numpy().tolist()
        starts = position == 0 or words[position - 1] in '.!?¿¡…:"«“'
        name = (
            len(word) >= 2
            and unicodedata.category(word[0]) == "Lu"
            and all(unicodedata.category(c)[0] in "LM" for c in word)
        )
        if (
            ("numbers" in rules and re.fullmatch("[0-9]+", word))
            or ("unknown" in rules and 1 in pieces)
            or ("names" in rules and name and not starts and len(pieces) > 1)
        ):
            protected.append(word)
    return protected[:SLOTS]


SENTENCES = [
    "Mi amiga María vive en Buenos Aires desde 2015 .",
    "¿ Dónde está Tom ?",
    "Mi café ☕ por la mañana 😊",
    "María vive en Francia",  # "María" starts it; "Francia": [UNK]
    "1 2 3 4 5 6 7 8 9 10 11",  # more numbers than slots
    "",
]


@pytest.mark.parametrize(
    "rules",
    [("numbers",), ("names",), ("unknown",), ("numbers", "names", "unknown")],
)
def test_protect_finds_the_words_of_the_rules(placed, rules):
    tokenizer = placed.source_tokenizer
    placed = Placeholders(tokenizer, placed.target_tokenizer, rules)
    ids, words = placed.protect(tf.constant(SENTENCES))
    first = tokenizer.vocabulary_size - SLOTS
    for row, sentence in enumerate(SENTENCES):
        expected = _reference_protected(sentence, tokenizer, rules)
        got = [w.decode() for w in words[row].numpy()]
        assert got == expected, sentence
        # The ids: each protected word one placeholder, in order; the
        # other words their own pieces.
        pieces = []
        protected = list(expected)
        for word in sentence.split():
            if protected and word == protected[0]:
                pieces.append(first + len(expected) - len(protected))
                protected.pop(0)
            else:
                pieces += tokenizer.tokenize([word])[0].numpy().tolist()
        assert ids[row].numpy().tolist() == pieces, sentence


def test_a_training_pair_shares_placeholders_only_for_copied_words(placed):
    sources = [
        "Mi amiga María vive en Buenos Aires desde 2015 .",
        "tengo 3 gatos y 5 gatos",
    ]
    targets = [
        "My friend Mary lives in Buenos Aires since 2015 .",
        "I have 5 cats and 5 cats",
    ]
    source_ids, target_ids = placed.protect_pairs(
        tf.constant(sources), tf.constant(targets)
    )
    source = placed.source_tokenizer
    target = placed.target_tokenizer
    decoded = [[source.id_to_token(i) for i in row] for row in source_ids]
    # "María" is written "Mary": its pieces stay; "3" is not in the target.
    assert decoded[0] == (
        ["Mi", "amiga", "Mar", "##ía", "vive", "en"]
        + [placeholder(0), placeholder(1), "desde", placeholder(2), "."]
    )
    assert decoded[1] == ["tengo", "3", "gatos", "y", placeholder(0), "gatos"]
    decoded = [[target.id_to_token(i) for i in row] for row in target_ids]
    assert decoded[0] == (
        ["My", "friend", "Mary", "lives", "in", placeholder(0)]
        + [placeholder(1), "since", placeholder(2), "."]
    )
    assert decoded[1] == (
        ["I", "have", placeholder(0), "cats", "and", placeholder(0), "cats"]
    )


def test_restore_puts_the_words_back_and_drops_unknown_slots(placed):
    translations = tf.constant(
        [f"In {placeholder(1)}, {placeholder(0)} lives.", placeholder(4), "x"]
    )
    words = tf.ragged.constant([["María", "Buenos Aires"], ["7"], []])
    restored = placed.restore(translations, words).numpy().tolist()
    assert restored == [b"In Buenos Aires, Mar\xc3\xada lives.", b"", b"x"]
    # Two hypotheses a source: the rows of `words` serve pairs.
    doubled = placed.restore(
        tf.constant([placeholder(0), f"a {placeholder(0)}"] * 2),
        tf.ragged.constant([["1"], ["2"]]),
        repeats=2,
    )
    assert doubled.numpy().tolist() == [b"1", b"a 1", b"2", b"a 2"]


def test_graph_mode_protects_and_restores_as_eager(placed):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(texts):
        ids, words = placed.protect(texts)
        return ids.to_tensor(), words.to_tensor("")

    ids, words = placed.protect(tf.constant(SENTENCES))
    graph_ids, graph_words = round_trip(tf.constant(SENTENCES))
    np.testing.assert_array_equal(graph_ids, ids.to_tensor())
    np.testing.assert_array_equal(graph_words, words.to_tensor(""))


def test_a_vocabulary_without_placeholders_is_refused():
    plain = SubwordTokenizer(list(RESERVED_TOKENS) + ["a"])
    with pytest.raises(ValueError, match="trained without `placeholders`"):
        Placeholders(plain, plain)


def test_the_flag_and_the_config_field(capsys):
    parser = flags.train_parser()
    args = parser.parse_args(["--placeholders", "numbers,unknown"])
    config = train._config(args, synthetic=True)
    assert config.placeholders == ("numbers", "unknown")
    assert TranslationConfig.from_json(config.to_json()) == config
    none = parser.parse_args(["--placeholders", "none"])
    assert train._config(none, synthetic=True).placeholders == ()
    with pytest.raises(SystemExit):
        parser.parse_args(["--placeholders", "numbers,dates"])
    error = capsys.readouterr().err.splitlines()[-1]
    assert "--placeholders: must be none or distinct rules" in error
    with pytest.raises(ValueError, match="`placeholders` must be one of"):
        TranslationConfig(placeholders=("dates",))


def _copy_pairs(count, seed):
    """Pairs that copy a number and a name: "tengo N gatos de NAME." ->
    "I have N cats of NAME.", with numbers and names drawn anew."""
    rng = np.random.default_rng(seed)
    letters = "bcdfgklmnprstvz"
    pairs = []
    for _ in range(count):
        number = str(rng.integers(10, 100000))
        name = "".join(rng.choice(list(letters), 5)).capitalize()
        pairs.append(
            (
                f"tengo {number} gatos de {name}.",
                f"I have {number} cats of {name}.",
            )
        )
    return pairs


def test_a_translator_trained_with_placeholders_copies_new_words(tmp_path):
    keras.utils.set_random_seed(0)
    config = (
        registry.get("translation")
        .tiny_config()
        .replace(
            placeholders=("numbers", "names"), epochs=5, learning_rate=1e-2
        )
    )
    translator = Translator(config)
    translator.fit(_copy_pairs(192, seed=0), verbose=0)
    sources = [source for source, _ in _copy_pairs(8, seed=1)]
    translations = translator.translate(sources)
    expected = [target for _, target in _copy_pairs(8, seed=1)]
    assert translations == expected
    exported = translator.export(str(tmp_path / "1"))
    serve = tf.saved_model.load(exported).signatures["serving_default"]
    served = serve(text=tf.constant(sources))["translation"].numpy()
    assert [text.decode() for text in served] == translations


def test_pictures_label_a_placeholder_with_characters_their_font_has():
    # matplotlib's DejaVu Sans has no `⦅`: a label would be a box and a
    # warning (the documented Transformer line's tiny run drew one).
    from attention_zoo_apps.translation.evaluate import _shown

    assert _shown("⦅12⦆") == "<12>" and _shown("casa") == "casa"
