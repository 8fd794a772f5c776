"""Texts of a chosen tokenized length, for an export's warm-up requests.

An export compiles its model once per padded input shape, and pads token
ids to a multiple of a few tokens (a length bucket). Its warm-up requests
(`SavedBundle.warmup_inputs`, written with the export by
`attention_zoo.export.write_warmup_requests`) hold one input per bucket:

- `bucket_lengths(limit, multiple)`: the longest length of each bucket
  up to `limit` (where the export cuts inputs);
- `text_of_length(tokenizer, length)`: a text of vocabulary words that
  the tokenizer turns into exactly `length` ids;
- `string_array(values)`: what a tf.string input of a request is.
"""

import numpy as np
import tensorflow as tf

from attention_zoo.buckets import bucket_length
from attention_zoo_apps.common.token_ids import RESERVED_TOKENS
from attention_zoo_apps.common.wordpiece import SUFFIX_INDICATOR

# How many single-token words of the vocabulary the texts cycle through.
_WORDS = 50


def bucket_lengths(limit, multiple):
    """The longest length of each bucket of `multiple` ids that an input
    cut to `limit` ids can fall in: `[multiple, 2 * multiple, ...]`, the
    last one `limit` (e.g. `bucket_lengths(20, 8) == [8, 16, 20]`)."""
    last = bucket_length(limit, multiple)
    return [min(top, limit) for top in range(multiple, last + 1, multiple)]


def text_of_length(tokenizer, length):
    """A text that `tokenizer` (a `SubwordTokenizer`) turns into exactly
    `length` ids: `length` words of its vocabulary, each one id (the
    first whole words of the vocabulary, in turn).

    Raises:
        ValueError: the vocabulary has no whole word that is one id, or
            the tokenizer cuts texts shorter than `length` (its own
            `max_length`).
    """
    words = _single_token_words(tokenizer)
    text = " ".join(words[i % len(words)] for i in range(length))
    found = int(tokenizer.tokenize(tf.constant([text])).row_lengths()[0])
    if found != length:
        raise ValueError(
            f"Could not make a text of {length} tokens: the tokenizer gives "
            f"{found} for {text!r:.100}"
        )
    return text


def string_array(values):
    """A NumPy object array of UTF-8 bytes (what tf.string takes), of the
    shape of `values` (str, or nested lists of str)."""
    encode = np.vectorize(lambda value: value.encode("utf-8"), otypes=[object])
    return encode(np.asarray(values, dtype=object))


def _single_token_words(tokenizer):
    """Up to `_WORDS` alphabetic words of the vocabulary that the
    tokenizer reads as one id each, longest-standing (lowest id) first;
    single letters only when there are no longer words."""
    candidates = [
        token
        for token in tokenizer.vocabulary
        if token not in RESERVED_TOKENS
        and not token.startswith(SUFFIX_INDICATOR)
        and token.isalpha()
    ]
    if candidates:
        lengths = tokenizer.tokenize(tf.constant(candidates)).row_lengths()
        candidates = [
            word
            for word, count in zip(candidates, lengths.numpy())
            if count == 1
        ]
    words = [word for word in candidates if len(word) > 1] or candidates
    if not words:
        raise ValueError(
            "The vocabulary has no whole word that tokenizes to one id: no "
            "warm-up text can be made from it."
        )
    return words[:_WORDS]
