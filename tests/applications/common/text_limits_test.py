"""`text_limits.cut_text`: a text is cut before tokenization to what holds
the tokens a model reads, which are then those of the whole text, and the
cut is reported."""

import re

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps.common import text_limits
from attention_zoo_apps.common.wordpiece import SubwordTokenizer

WORDS = "the old sad dirty bird stands near a river , café 3.5 ok !".split()


@pytest.fixture(scope="module")
def tokenizer():
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, 8)) for _ in range(200)]
    return SubwordTokenizer.train(texts, vocabulary_size=60)


def _ids(tokenizer, texts):
    return tokenizer.tokenize(tf.constant(texts)).to_list()


def _texts(count, seed):
    """Texts of ordinary words with whitespace runs, tabs and newlines,
    long enough to be cut at 8 tokens."""
    rng = np.random.default_rng(seed)
    spaces = [" ", "  ", "\t", "\n\n", " \r\n "]
    return [
        "".join(
            str(rng.choice(WORDS)) + str(rng.choice(spaces))
            for _ in range(int(rng.integers(1, 400)))
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("keep", ["first", "last"])
def test_the_tokens_read_are_those_of_the_whole_text(tokenizer, keep):
    tokens = 8
    texts = _texts(30, seed=1) + ["", "   ", "bird", " \n".join(WORDS)]
    cut, was_cut = text_limits.cut_text(tf.constant(texts), tokens, keep)
    limit = text_limits.characters_read(tokens)
    for text, whole, part, flag in zip(
        texts, _ids(tokenizer, texts), _ids(tokenizer, cut), was_cut.numpy()
    ):
        read = slice(None, tokens) if keep == "first" else slice(-tokens, None)
        assert part[read] == whole[read], text
        # Cut only past the bound (whitespace runs count as one space).
        assert flag == (len(re.sub(r"[\t\n\f\r ]+", " ", text)) > limit)
        if not flag:
            assert part == whole


def test_a_huge_text_is_cut_to_the_bound_and_said_so():
    text = "word " * 6_000_000  # 30 MB
    cut, was_cut = text_limits.cut_text(tf.constant([text, "a b"]), 64)
    lengths = tf.strings.length(cut, unit="UTF8_CHAR").numpy()
    assert lengths.tolist() == [text_limits.characters_read(64), 3]
    assert was_cut.numpy().tolist() == [True, False]


def test_characters_are_cut_whole_and_bad_bytes_replaced():
    text = b"\xff" + "é".encode() * 5000
    (cut,), _ = text_limits.cut_text(tf.constant([text]), 1, keep="last")
    decoded = cut.numpy().decode("utf-8")  # valid UTF-8: no half character
    assert decoded == "é" * text_limits.characters_read(1)
    (cut,), (flag,) = text_limits.cut_text(tf.constant([b"a\xffb"]), 4)
    assert cut.numpy().decode() == "a\ufffdb" and not flag


def test_keep_must_be_first_or_last():
    with pytest.raises(ValueError, match="keep"):
        text_limits.cut_text(tf.constant(["a"]), 4, keep="middle")
