"""Request strings cut to what a model reads, before they are tokenized.

An export that reads the first (or last) `N` WordPiece tokens of a text
need not tokenize the rest: `cut_text` cuts each string, in the graph, to
a number of characters that holds those `N` tokens, so a 30 MB request
costs a few kilobytes of tokens, not a whole tokenization (which costs
about 25 times the text in memory).

The bound: after every whitespace run is made one space (which splits
into the same words), each of the `N` tokens comes from a word of at most
`MAX_WORD_BYTES` bytes (WordPiece reads a longer word as one `[UNK]`)
and its separator, so `N * (MAX_WORD_BYTES + 1) + 1` characters hold the
first (last) `N` words, and so at least `N` tokens, of any text whose
words are shorter. A text longer than that is cut, and `cut_text` says
so: its caller reports the text as truncated (the tokens read are then
those of the cut text, the same for ordinary text).
"""

import tensorflow as tf

# tensorflow_text.FastWordpieceTokenizer's `max_bytes_per_word`: a longer
# word is one `[UNK]`, whatever its length.
MAX_WORD_BYTES = 100


def characters_read(tokens):
    """The characters `cut_text` keeps of a text read to `tokens` tokens."""
    return tokens * (MAX_WORD_BYTES + 1) + 1


def cut_text(strings, tokens, keep="first"):
    """`strings` cut to what a tokenizer reading `tokens` tokens needs.

    Invalid UTF-8 becomes U+FFFD (as `SubwordTokenizer.tokenize` would
    make it), whitespace runs one space, then each string keeps its first
    (`keep="first"`) or last (`keep="last"`) `characters_read(tokens)`
    characters. TensorFlow ops only, linear in the input's size.

    Args:
        strings: tf.string `(B,)`.
        tokens: int, the tokens the model reads of each string.
        keep: `"first"` or `"last"`, the end of the text that is read.

    Returns:
        A tuple: tf.string `(B,)`, the cut strings, and bool `(B,)`, which
        strings were cut.
    """
    if keep not in ("first", "last"):
        raise ValueError(f"`keep` must be 'first' or 'last'. Received: {keep}")
    limit = characters_read(tokens)
    text = tf.strings.unicode_transcode(
        strings, "UTF-8", "UTF-8", errors="replace"
    )
    # RE2's `\s` is the tokenizer's word separator: the same words.
    text = tf.strings.regex_replace(text, r"\s+", " ")
    length = tf.strings.length(text, unit="UTF8_CHAR")  # (B,)
    start = tf.zeros_like(length)
    if keep == "last":
        start = tf.maximum(length - limit, 0)
    cut = tf.strings.substr(
        text, start, tf.fill(tf.shape(length), limit), unit="UTF8_CHAR"
    )
    return cut, length > limit
