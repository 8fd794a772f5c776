"""SubwordTokenizer: training, round trips, Unicode, save/load, export."""

import json

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps.common.wordpiece import END_ID
from attention_zoo_apps.common.wordpiece import PAD_ID
from attention_zoo_apps.common.wordpiece import RESERVED_TOKENS
from attention_zoo_apps.common.wordpiece import START_ID
from attention_zoo_apps.common.wordpiece import UNK_ID
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from tests.support.fresh_process import run_without_project

CORPUS = [
    "The cat sat on the mat.",
    "The dog sat on the log!",
    "Café, naïve, résumé: ¿qué tal?",
    "東京は大きい",
    "I love 🍕 and 🍣",
    "Cats and dogs, cats and dogs.",
] * 12


# Exactly the tensorflow-text op libraries a SubwordTokenizer export needs:
# NormalizeUTF8, RegexSplitWithOffsets, FastWordpieceTokenizeWithOffsets.
TOKENIZER_OP_LIBRARIES = [
    "_normalize_ops.so",
    "_regex_split_ops.so",
    "_fast_wordpiece_tokenizer.so",
]


def _tokenizer(**kwargs):
    kwargs.setdefault("vocabulary_size", 200)
    kwargs.setdefault("learn_params", {"lower_thresh": 2})
    return SubwordTokenizer.train(CORPUS, **kwargs)


def _ragged_to_lists(ids):
    return [row.tolist() for row in ids.numpy()]


def test_reserved_tokens_have_fixed_ids():
    tokenizer = _tokenizer()
    assert tokenizer.vocabulary[:4] == list(RESERVED_TOKENS)
    assert (PAD_ID, UNK_ID, START_ID, END_ID) == (0, 1, 2, 3)
    assert tokenizer.id_to_token(START_ID) == "[START]"
    assert tokenizer.token_to_id("[END]") == END_ID
    assert tokenizer.token_to_id("never-seen-token") == UNK_ID
    assert tokenizer.vocabulary_size == len(tokenizer.vocabulary)
    assert tokenizer.vocabulary_size <= 200


def test_round_trip_of_normalized_text():
    tokenizer = _tokenizer()
    texts = ["The cat sat on the mat.", "Cats and dogs"]
    ids = tokenizer.tokenize(texts, add_start=True, add_end=True)
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
    for row in _ragged_to_lists(ids):
        assert row[0] == START_ID and row[-1] == END_ID
        assert START_ID not in row[1:-1] and END_ID not in row[1:-1]
        assert PAD_ID not in row
    # Lower-cased; the punctuation split off is joined back.
    expected = [b"the cat sat on the mat.", b"cats and dogs"]
    assert tokenizer.detokenize(ids).numpy().tolist() == expected


def test_words_are_split_into_known_pieces():
    tokenizer = _tokenizer()
    ids = tokenizer.tokenize(["catsdogs"])[0].numpy().tolist()
    tokens = [tokenizer.id_to_token(i) for i in ids]
    assert len(tokens) > 1 and all(t.startswith("##") for t in tokens[1:])
    assert "".join(t.removeprefix("##") for t in tokens) == "catsdogs"
    assert tokenizer.detokenize([ids]).numpy()[0] == b"catsdogs"


def test_detokenize_stops_at_end_and_drops_pad_and_start():
    tokenizer = _tokenizer()
    the, cat = tokenizer.tokenize(["the cat"])[0].numpy().tolist()
    ids = np.array(
        [
            [START_ID, the, cat, END_ID, the, PAD_ID],
            [the, PAD_ID, cat, PAD_ID, PAD_ID, PAD_ID],
            [END_ID, the, cat, PAD_ID, PAD_ID, PAD_ID],
            [the, 10**6, -5, UNK_ID, PAD_ID, PAD_ID],  # out of range -> UNK
        ],
        "int32",
    )
    out = tokenizer.detokenize(ids).numpy().tolist()
    assert out == [b"the cat", b"the cat", b"", b"the [UNK] [UNK] [UNK]"]
    ragged = tf.ragged.constant([[START_ID, the, END_ID], [cat]])
    assert tokenizer.detokenize(ragged).numpy().tolist() == [b"the", b"cat"]
    # A single row (rank 1) gives a scalar.
    assert tokenizer.detokenize(ids[0]).numpy() == b"the cat"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\t\n",
        "café",
        "ＣＡＦＥ",
        "東京",
        "🍕🍕",
        "a\u0301",
        "x" * 300,
    ],
)
def test_unicode_and_empty_strings_do_not_crash(text):
    tokenizer = _tokenizer()
    plain = tokenizer.tokenize([text])
    marked = tokenizer.tokenize([text], add_start=True, add_end=True)
    assert marked.numpy()[0].tolist() == (
        [START_ID] + plain.numpy()[0].tolist() + [END_ID]
    )
    if not text.strip():
        assert plain.numpy()[0].tolist() == []
        assert tokenizer.detokenize(marked).numpy()[0] == b""
    else:
        assert len(plain.numpy()[0]) >= 1
        tokenizer.detokenize(marked).numpy()


def test_normalization_lowercase_and_accents():
    tokenizer = _tokenizer()
    # NFKC folds full-width letters; lower-casing is Unicode-aware.
    full_width = tokenizer.tokenize(["ＣＡＴ"]).numpy()[0].tolist()
    assert full_width == tokenizer.tokenize(["cat"]).numpy()[0].tolist()
    # Composed and decomposed accents normalize to the same ids.
    composed = tokenizer.tokenize(["caf\u00e9"]).numpy()[0].tolist()
    decomposed = tokenizer.tokenize(["cafe\u0301"]).numpy()[0].tolist()
    assert composed == decomposed
    cased = _tokenizer(lowercase=False, normalization=None)
    assert "T" in "".join(cased.vocabulary)
    assert cased.detokenize(cased.tokenize(["The cat"])).numpy()[0] == (
        b"The cat"
    )
    stripped = _tokenizer(strip_accents=True)
    assert stripped.detokenize(stripped.tokenize(["Café"])).numpy()[0] == (
        b"cafe"
    )


def test_cjk_and_punctuation_are_separate_words():
    tokenizer = _tokenizer(join_punctuation=False)
    ids = tokenizer.tokenize(["東京は", "¿qué?"])
    pieces = [[tokenizer.id_to_token(i) for i in row] for row in ids.numpy()]
    assert pieces == [["東", "京", "は"], ["¿", "qué", "?"]]
    assert tokenizer.detokenize(ids).numpy().tolist() == [
        "東 京 は".encode(),
        "¿ qué ?".encode(),
    ]


# Written text -> what tokenize then detokenize gives back (lower-cased).
JOINED = [
    ("I'm here, aren't I?", "i'm here, aren't i?"),
    ("We'll see; it's Tom's.", "we'll see; it's tom's."),
    (
        "The students' books (all 3.50 dollars).",
        "the students' books (all 3.50 dollars).",
    ),
    ("¿Qué pasa? ¡Nada!", "¿qué pasa? ¡nada!"),
    (
        "A well-known, twenty-one-year-old man...",
        "a well-known, twenty-one-year-old man...",
    ),
    (
        "L'homme qu'il voit: «hola» at 10:30.",
        "l'homme qu'il voit: «hola» at 10:30.",
    ),
    ("東京は大きい。", "東京は大きい。"),
    ('He said "hi".', 'he said "hi".'),
]

# Cased text in English, Spanish, German and French that comes back as
# written (`lowercase=False`).
CASED = [
    "I'm here, aren't I? DON'T go.",
    "Tom's dog isn't here; she said 'yes' to the students' books.",
    'He said "hi" to me. He said "hi".',
    "¿Qué pasa? ¡Nada! «Hola», dijo.",
    "„Hallo“, sagte er. Er sagte „Hallo“ und ging. Das ist ‚gut‘.",
    "C'est la vie, qu'il dit. L'Homme voit: «Bonjour», dit-il.",
    "Qu'est-ce que c'est? J'ai 3.50 euros à 10:30.",
]


def test_cased_text_comes_back_as_written():
    tokenizer = SubwordTokenizer.train(
        CASED * 3,
        vocabulary_size=400,
        lowercase=False,
        learn_params={"lower_thresh": 1},
    )
    ids = tokenizer.tokenize(CASED)
    assert UNK_ID not in ids.flat_values.numpy().tolist()
    out = [t.decode() for t in tokenizer.detokenize(ids).numpy()]
    assert out == CASED


def test_detokenize_joins_punctuation_back():
    texts = [text for text, _ in JOINED]
    tokenizer = SubwordTokenizer.train(
        texts * 3, vocabulary_size=300, learn_params={"lower_thresh": 1}
    )
    ids = tokenizer.tokenize(texts, add_start=True, add_end=True)
    assert UNK_ID not in ids.flat_values.numpy().tolist()
    out = [t.decode() for t in tokenizer.detokenize(ids).numpy()]
    assert out == [expected for _, expected in JOINED]
    spaced = SubwordTokenizer(tokenizer.vocabulary, join_punctuation=False)
    assert spaced.detokenize(ids).numpy()[0] == b"i ' m here , aren ' t i ?"


def test_max_length_truncates_text_and_keeps_start_end():
    tokenizer = _tokenizer(max_length=4)
    ids = tokenizer.tokenize(
        ["the cat sat on the mat", "the"], add_start=True, add_end=True
    )
    rows = _ragged_to_lists(ids)
    assert len(rows[0]) == 4 and rows[0][0] == START_ID
    assert rows[0][-1] == END_ID
    assert len(rows[1]) == 3
    assert len(tokenizer.tokenize(["the cat sat on the mat"])[0]) == 4


def test_save_load_and_config_round_trip(tmp_path):
    tokenizer = _tokenizer(
        strip_accents=True, max_length=9, join_punctuation=False
    )
    tokenizer.save(tmp_path)
    lines = (tmp_path / "vocabulary.txt").read_text("utf-8").splitlines()
    assert lines == tokenizer.vocabulary
    options = json.loads((tmp_path / "tokenizer.json").read_text("utf-8"))
    assert options["strip_accents"] is True and options["max_length"] == 9
    assert options["join_punctuation"] is False
    for other in (
        SubwordTokenizer.load(tmp_path),
        SubwordTokenizer.from_config(tokenizer.get_config()),
    ):
        assert other.get_config() == tokenizer.get_config()
        a = tokenizer.tokenize(CORPUS[:6], add_end=True)
        b = other.tokenize(CORPUS[:6], add_end=True)
        assert _ragged_to_lists(a) == _ragged_to_lists(b)


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="vocabulary"):
        SubwordTokenizer(["a", "[PAD]", "[UNK]", "[START]", "[END]"])
    with pytest.raises(ValueError, match="duplicate"):
        SubwordTokenizer(list(RESERVED_TOKENS) + ["a", "a"])
    with pytest.raises(ValueError, match="normalization"):
        SubwordTokenizer(list(RESERVED_TOKENS), normalization="NFX")
    with pytest.raises(ValueError, match="max_length"):
        SubwordTokenizer(list(RESERVED_TOKENS), max_length=0)
    with pytest.raises(ValueError, match="vocabulary_size"):
        SubwordTokenizer.train(CORPUS, vocabulary_size=3)
    with pytest.raises(ValueError, match="texts"):
        SubwordTokenizer.train("one string", vocabulary_size=100)
    with pytest.raises(ValueError, match="learn_params"):
        SubwordTokenizer.train(CORPUS, learn_params={"bogus": 1})


def test_vocabulary_size_is_respected_when_reachable():
    words = [f"w{i:03d}x" for i in range(300)]
    texts = [" ".join(words[i : i + 10]) for i in range(290)] * 10
    tokenizer = SubwordTokenizer.train(
        texts, vocabulary_size=120, learn_params={"lower_thresh": 1}
    )
    assert 0.9 * 120 <= tokenizer.vocabulary_size <= 120
    assert tokenizer.vocabulary[:4] == list(RESERVED_TOKENS)


def test_tokenize_inside_tf_function_equals_eager():
    tokenizer = _tokenizer()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(strings):
        ids = tokenizer.tokenize(strings, add_start=True, add_end=True)
        return ids.to_tensor(), tokenizer.detokenize(ids)

    dense, text = round_trip(tf.constant(CORPUS[:6]))
    eager = tokenizer.tokenize(CORPUS[:6], add_start=True, add_end=True)
    np.testing.assert_array_equal(dense.numpy(), eager.to_tensor().numpy())
    np.testing.assert_array_equal(
        text.numpy(), tokenizer.detokenize(eager).numpy()
    )


class _Exported(tf.Module):
    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, strings):
        ids = self.tokenizer.tokenize(strings, add_start=True, add_end=True)
        return {"ids": ids.to_tensor(), "lengths": ids.row_lengths()}

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def detokenize(self, ids):
        return {"text": self.tokenizer.detokenize(ids)}


def test_exported_tokenizer_runs_without_keras(tmp_path):
    tokenizer = _tokenizer()
    module = _Exported(tokenizer)
    path = str(tmp_path / "tokenizer_model")
    tf.saved_model.save(
        module,
        path,
        signatures={
            "tokenize": module.tokenize,
            "detokenize": module.detokenize,
        },
    )
    texts = CORPUS[:6] + ["", "  ", "unseen wörds 🙂"]
    expected = module.tokenize(tf.constant(texts))
    expected_text = module.detokenize(expected["ids"])["text"].numpy()
    result = run_without_project(
        f"""
        loaded = tf.saved_model.load({path!r})
        texts = tf.constant({texts!r})
        out = loaded.signatures["tokenize"](strings=texts)
        text = loaded.signatures["detokenize"](ids=out["ids"])["text"]
        direct = loaded.tokenize(texts)["ids"]
        emit({{
            "ids": out["ids"].numpy().tolist(),
            "lengths": out["lengths"].numpy().tolist(),
            "direct": direct.numpy().tolist(),
            "text": [t.decode("utf-8") for t in text.numpy()],
            "op_libraries": [os.path.basename(p) for p in OP_LIBRARIES],
            "keras_loaded": any(
                sys.modules.get(m) is not None
                for m in ("keras", "keras_hub", "tensorflow_text")
            ),
        }})
        """,
        op_libraries=TOKENIZER_OP_LIBRARIES,
    )
    assert not result["keras_loaded"]
    assert sorted(result["op_libraries"]) == sorted(TOKENIZER_OP_LIBRARIES)
    np.testing.assert_array_equal(result["ids"], expected["ids"].numpy())
    np.testing.assert_array_equal(result["direct"], expected["ids"].numpy())
    np.testing.assert_array_equal(
        result["lengths"], expected["lengths"].numpy()
    )
    assert [t.encode() for t in result["text"]] == expected_text.tolist()
