"""Texts longer than a translation model reads, read sentence by sentence.

A translation model reads at most `max_length` subword tokens of a source
(`TranslationConfig.max_length`, the model card's `text_tokens`). A longer
text is split into sentences, each sentence is translated on its own and
the translations are joined with one space. These are TensorFlow ops only
(but `joined_attention_arrays`, `join_attention`'s NumPy twin): the
export runs them in its graph (so TF Serving splits alike) and
`Translator.translate` eagerly, so both give the same translations.

`split_texts` reads each text in four steps:

1. The text is cut, before it is tokenized, to what `MAX_SENTENCES`
   sentences of `max_length` tokens can hold (`text_limits.cut_text`,
   after a cut to 4 bytes per character it keeps): a 30 MB request is
   neither copied nor tokenized whole.
2. A text of at most `max_length` tokens is one sentence, read exactly as
   it always was.
3. A longer text is split after sentence-final punctuation (`.`, `!`,
   `?`, `…`, then any closing quotes or brackets) followed by whitespace
   (a regex, so an abbreviation such as "Sr. García" splits too); its
   first `MAX_SENTENCES` sentences are read.
4. Each sentence is tokenized and cut to `max_length` tokens.

A text is `truncated` when some of it was not read: a sentence still
longer than `max_length` tokens (cut), more than `MAX_SENTENCES`
sentences (the rest dropped), or a text longer than step 1 keeps.
"""

import collections

import numpy as np
import tensorflow as tf

from attention_zoo_apps.common import text_limits
from attention_zoo_apps.common.token_ids import PAD_ID

# The most sentences read of one text: its attention output is at most
# `MAX_SENTENCES * (max_length + 1)` by `MAX_SENTENCES * max_length`.
MAX_SENTENCES = 16
# Sentence-final punctuation and closing marks, whitespace, and the next
# sentence's first character (RE2 has no lookahead: it is put back).
SENTENCE_END = r"""([.!?…]+["'”’»)\]]*)\s+(\S)"""
# Never in valid UTF-8, and `cut_text` makes the text valid UTF-8.
_SEPARATOR = b"\xff"
_BYTES_PER_CHARACTER = 4  # at most, in UTF-8

Sentences = collections.namedtuple(
    "Sentences",
    ["source_ids", "rows", "positions", "truncated", "protected_words"],
)
Sentences.__doc__ = """The sentences of a batch of `B` texts, `N` in all.

Attributes:
    source_ids: int32 `(N, Ts)`, each sentence's first `max_length`
        token ids, PAD-filled (as `data.encode_sources` gives them).
    rows: int32 `(N,)`, the text of each sentence, in order (`N = B` and
        `rows = range(B)` when no text was split).
    positions: int32 `(N,)`, each sentence's place in its text (0 first).
    truncated: bool `(B,)`, some of the text was not read.
    protected_words: str `(N, (k))`, each sentence's words that its
        placeholders stand for (`Placeholders.protect`), or `None` (no
        placeholders).
"""


def max_text_tokens(max_length):
    """The tokens `split_texts` keeps room for in one text."""
    return MAX_SENTENCES * max_length


def split_texts(tokenizer, texts, max_length, placeholders=None):
    """`texts` tf.string `(B,)` -> their `Sentences` (see the module
    docstring) for a `SubwordTokenizer` model reading `max_length`
    tokens of a source; with `placeholders` (a `Placeholders`) the
    sentences are tokenized by its `protect`."""

    def tokenize(strings):
        if placeholders is None:
            return tokenizer.tokenize(strings), None
        return placeholders.protect(strings)

    texts = tf.convert_to_tensor(texts, tf.string)
    tokens = max_text_tokens(max_length)
    # Bytes first, so that a huge text costs no copies: a character is at
    # most 4 bytes, so this keeps what `cut_text` reads of a text without
    # long whitespace runs (one with them is cut, and flagged).
    size = _BYTES_PER_CHARACTER * text_limits.characters_read(tokens)
    oversized = tf.strings.length(texts) > size
    texts = tf.strings.substr(texts, 0, size)
    text, cut = text_limits.cut_text(texts, tokens)
    whole = tokenize(text)[0].row_lengths()  # (B,)
    marked = tf.strings.regex_replace(
        text, SENTENCE_END, b"\\1" + _SEPARATOR + b"\\2"
    )
    # Only a text the model cannot read whole is split.
    marked = tf.where(whole > max_length, marked, text)
    pieces = tf.strings.split(marked, sep=_SEPARATOR)  # (B, (S)), S >= 1
    dropped = pieces.row_lengths() > MAX_SENTENCES  # (B,)
    pieces = pieces[:, :MAX_SENTENCES]
    tokens, protected_words = tokenize(pieces.flat_values)  # (N, (T))
    lengths = pieces.with_flat_values(tokens.row_lengths())  # (B, (S))
    too_long = tf.reduce_any(lengths > max_length, axis=1)  # (B,)
    rows = tf.cast(pieces.value_rowids(), tf.int32)
    starts = tf.gather(tf.cast(pieces.row_starts(), tf.int32), rows)
    return Sentences(
        source_ids=tf.cast(tokens[:, :max_length], tf.int32).to_tensor(PAD_ID),
        rows=rows,
        positions=tf.range(tf.size(rows)) - starts,
        truncated=oversized | cut | dropped | too_long,
        protected_words=protected_words,
    )


def sentence_seeds(seed, sentences):
    """Each sentence's int64 seed `(N,)` from its text's `seed` `(B,)`:
    sentence `j` of a text gets the text's seed plus `j` (a text read
    whole keeps its seed)."""
    return tf.gather(seed, sentences.rows) + tf.cast(
        sentences.positions, seed.dtype
    )


def join_texts(strings, rows, batch_size):
    """The sentences' strings `(N, ...)` joined per text with one space,
    in order: `(B, ...)` for texts `rows` `(N,)` of `batch_size`."""
    return tf.strings.unsorted_segment_join(
        strings, rows, batch_size, separator=" "
    )


def join_scores(scores, rows, batch_size):
    """The sentences' scores `(N, ...)` summed per text: `(B, ...)`."""
    return tf.math.unsorted_segment_sum(scores, rows, batch_size)


def join_attention(attention, target_lengths, sentences, batch_size):
    """The sentences' attention maps placed block by block per text.

    Sentence `j` of a text attends over its own tokens only: the text's
    map is block-diagonal, its target rows (END included) and source
    columns in sentence order; a text read whole keeps its map.

    Args:
        attention: float `(N, L, Ts)`, zero past each sentence's lengths.
        target_lengths: int `(N,)`, each translation's length.
        sentences: the batch's `Sentences`.
        batch_size: int32 scalar, `B`.

    Returns:
        float32 `(B, T, S)`, with `T` and `S` the largest per-text sums of
        the target and source lengths.
    """
    attention = tf.cast(attention, tf.float32)
    target = tf.cast(target_lengths, tf.int64)  # (N,)
    source = tf.reduce_sum(
        tf.cast(sentences.source_ids != PAD_ID, tf.int64), axis=1
    )  # (N,)
    rows = tf.cast(sentences.rows, tf.int64)
    first = tf.range(tf.size(rows, tf.int64)) - tf.cast(
        sentences.positions, tf.int64
    )  # (N,): the index of each text's first sentence
    shape = tf.shape(attention, tf.int64)
    steps = tf.range(shape[1])[None, :, None]  # (1, L, 1)
    columns = tf.range(shape[2])[None, None, :]  # (1, 1, Ts)
    inside = (steps < target[:, None, None]) & (
        columns < source[:, None, None]
    )  # (N, L, Ts)
    where = tf.where(inside)  # (K, 3): sentence, step, column
    sentence = where[:, 0]
    index = tf.stack(
        [
            tf.gather(rows, sentence),
            tf.gather(_offsets(target, first), sentence) + where[:, 1],
            tf.gather(_offsets(source, first), sentence) + where[:, 2],
        ],
        axis=1,
    )  # (K, 3): text, its step, its column
    size = tf.stack(
        [
            tf.cast(batch_size, tf.int64),
            _longest_sum(target, rows, batch_size),
            _longest_sum(source, rows, batch_size),
        ]
    )
    return tf.scatter_nd(index, tf.gather_nd(attention, where), size)


def joined_attention_arrays(found, source_lengths, rows, count):
    """`B * N` attention maps `(target_tokens, source_tokens)`, text-major:
    each text's sentences' maps (of `found`, `hypothesis_arrays`) placed
    block by block, in sentence order."""
    lengths, attention = found["lengths"], found["attention"]
    maps = []
    for text in range(count):
        members = np.flatnonzero(rows == text)
        for rank in range(lengths.shape[1]):
            blocks = [
                attention[i, rank, : lengths[i, rank], : source_lengths[i]]
                for i in members
            ]
            joined = np.zeros(
                tuple(map(sum, zip(*(b.shape for b in blocks)))), "float32"
            )
            row = column = 0
            for block in blocks:
                rows_here, columns_here = block.shape
                joined[
                    row : row + rows_here, column : column + columns_here
                ] = block
                row, column = row + rows_here, column + columns_here
            maps.append(joined)
    return maps


def _offsets(lengths, first):
    """Each sentence's start `(N,)` in its text: the sum of the `lengths`
    `(N,)` of the text's sentences before it (`first`: the index of its
    text's first sentence)."""
    before = tf.cumsum(lengths, exclusive=True)
    return before - tf.gather(before, first)


def _longest_sum(lengths, rows, batch_size):
    """The largest per-text sum of `lengths` `(N,)`; 0 for no text."""
    sums = tf.math.unsorted_segment_sum(lengths, rows, batch_size)
    return tf.reduce_max(tf.concat([sums, tf.zeros([1], sums.dtype)], 0))
