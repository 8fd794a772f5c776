"""Placeholders: names, numbers and unknown words copied, not translated.

A translator trained on Tatoeba spells a name it rarely saw ("María":
`mar ##ía`), a number (`20 ##1 ##5`) or an emoji (`[UNK]`) in pieces it
then translates as words: "María" came back "boughts", "2015" "2005",
"☕" nothing. With `TranslationConfig.placeholders`, such a source word
becomes one placeholder token, `⦅0⦆`, `⦅1⦆`, ... (`SLOTS` of them, in
order of appearance), the model learns to write the placeholder where the
word belongs, and the word is put back into the translation. This is the
placeholder scheme of production systems (SYSTRAN's and Marian's
placeholders, OpenNMT's protected sequences; Crego et al., 2016,
"SYSTRAN's Pure Neural Machine Translation Systems", section 5.2),
done here with TensorFlow Text ops only, so the export does it in its
graph.

A source word is protected by the rules the config names (`RULES`):

- `"numbers"`: a word of digits (`2015`; "3.5" is the words `3`, `.`,
  `5`, each digit word protected, put back as `3.5`).
- `"names"`: a capitalized word of two letters or more that does not
  start a sentence (not first, not after `.!?¿¡…:"«“`) and that the
  source vocabulary spells in two pieces or more: a name it rarely saw.
  A frequent one ("Tom", "María", "París") is one piece and is
  translated as the training pairs taught ("Mary", "Paris").
- `"unknown"`: a word the source vocabulary cannot spell (`[UNK]`: an
  emoji, a letter of another script).

In training (`protect_targets`) a target word that equals one of its
source's protected words takes that word's placeholder; the others keep
their pieces. The vocabularies end with the placeholder tokens
(`with_placeholders`); text never tokenizes into them (`⦅` is a
punctuation mark, split off), so a user cannot write one.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from attention_zoo_apps.common.token_ids import UNK_ID
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.common.wordpiece import split_words
from attention_zoo_apps.translation.options import PLACEHOLDER_RULES as RULES

# Placeholders per sentence; protected words past the last keep their
# pieces.
SLOTS = 8
PATTERN = "⦅[0-9]{1,3}⦆"
_NUMBER = "[0-9]+"
_NAME = r"\p{Lu}[\p{L}\p{M}]+"
# A word after one of these starts a sentence (its capital says nothing).
_SENTENCE_START = '[.!?¿¡…:"«“]'


def placeholder(slot):
    """The token of placeholder `slot`: `⦅0⦆`, `⦅1⦆`, ..."""
    return f"⦅{slot}⦆"


def with_placeholders(tokenizer, slots=SLOTS):
    """`tokenizer` (a `SubwordTokenizer`) with the `slots` placeholder
    tokens appended to its vocabulary (itself when it has them)."""
    tokens = [placeholder(slot) for slot in range(slots)]
    vocabulary = tokenizer.vocabulary
    if vocabulary[-slots:] == tokens:
        return tokenizer
    config = tokenizer.get_config()
    config["vocabulary"] = vocabulary + tokens
    return SubwordTokenizer.from_config(config)


class Placeholders:
    """Protects a batch's source words and puts them back (see the module
    docstring).

    Args:
        source_tokenizer, target_tokenizer: `SubwordTokenizer`s whose
            vocabularies end with the `SLOTS` placeholder tokens
            (`with_placeholders`).
        rules: the rules that protect a source word, from `RULES`.
    """

    def __init__(self, source_tokenizer, target_tokenizer, rules=RULES):
        self.rules = tuple(rules)
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self._source_first = _first_placeholder(source_tokenizer)
        self._target_first = _first_placeholder(target_tokenizer)

    def protect(self, texts):
        """Source `texts` `(B,)` -> `(ids, words)`: int32 ids `(B, (T))`,
        as `tokenize` gives them but each protected word one placeholder,
        and the protected words, str `(B, (k))`, `k <= SLOTS`, word `j`
        of a row the text of its placeholder `j`."""
        words, pieces, protected = self._source_words(texts)
        ids, replaced = _replace(pieces, protected, self._source_first)
        return ids, tf.ragged.boolean_mask(words, replaced)

    def protect_pairs(self, sources, targets):
        """Training pairs `(B,)`, `(B,)` -> their int32 ids `(B, (Ts))`,
        `(B, (Tt))`: a source word the rules protect becomes a
        placeholder only where its target holds the same word (written
        the same), which becomes that placeholder too; so the model
        learns that a placeholder is copied. (A protected word that the
        target translates, "María" -> "Mary", keeps its pieces on both
        sides.)"""
        words, pieces, protected = self._source_words(sources)
        candidates = tf.ragged.boolean_mask(
            words, words.with_flat_values(protected)
        )
        target_words = self._split(self.target_tokenizer, targets)
        known = _with_empty_column(candidates)[:, :, None]  # (B, C + 1, 1)
        # (B, C + 1, Wt): candidate c of a row is target word w of the row.
        equal = tf.equal(
            known, target_words.to_tensor("")[:, None, :]
        ) & tf.not_equal(known, "")
        copied = tf.reduce_any(equal, axis=2)[:, :-1]  # (B, C)
        copied = tf.RaggedTensor.from_tensor(
            copied, lengths=candidates.row_lengths()
        ).flat_values  # (Nc,)
        protected = tf.tensor_scatter_nd_update(
            tf.zeros_like(protected), tf.where(protected), copied
        )
        source_ids, replaced = _replace(pieces, protected, self._source_first)
        kept = tf.ragged.boolean_mask(words, replaced)
        return source_ids, self.protect_targets(targets, kept)

    def protect_targets(self, texts, protected_words):
        """Target `texts` `(B,)` -> int32 ids `(B, (T))`: each word equal
        to one of its source's `protected_words` `(B, (k))` is that word's
        placeholder, the others their pieces."""
        words = self._split(self.target_tokenizer, texts)
        pieces = self.target_tokenizer.tokenize_words(words)  # (B, (W), (P))
        known = tf.gather(
            _with_empty_column(protected_words), words.value_rowids()
        )  # (Nw, k + 1)
        equal = tf.equal(known, words.flat_values[:, None]) & tf.not_equal(
            known, ""
        )
        matched = tf.reduce_any(equal, axis=1)
        slot = tf.argmax(tf.cast(equal, tf.int32), axis=1, output_type=tf.int32)
        return _replace(pieces, matched, self._target_first, slot)[0]

    def restore(self, translations, protected_words, repeats=1):
        """Translations `(M,)` written by the target tokenizer, and their
        sources' `protected_words` `(M / repeats, (k))` (row `i` for
        translations `i * repeats` to `(i + 1) * repeats - 1`) -> the
        translations with every placeholder `⦅j⦆` replaced by word `j` (a
        placeholder with no word, or past the row's words, is dropped)."""
        if repeats != 1:
            rows = tf.repeat(tf.range(protected_words.nrows()), repeats)
            protected_words = tf.gather(protected_words, rows)
        parts = tf_text.regex_split(translations, PATTERN, PATTERN)
        flat = parts.flat_values
        is_placeholder = tf.strings.regex_full_match(flat, PATTERN)
        digits = tf.strings.regex_replace(flat, "[^0-9]", "")
        slot = tf.strings.to_number(
            tf.where(is_placeholder, digits, "0"), tf.int64
        )
        rows = parts.value_rowids()
        # A dropped placeholder reads the "" after its row's words.
        words = _with_empty_column(protected_words)
        known = tf.gather(protected_words.row_lengths(), rows)
        empty = tf.shape(words, tf.int64)[1] - 1
        column = tf.where(is_placeholder & (slot < known), slot, empty)
        word = tf.gather_nd(words, tf.stack([rows, column], axis=1))
        flat = tf.where(is_placeholder, word, flat)
        text = tf.strings.reduce_join(parts.with_flat_values(flat), axis=1)
        return tf.strings.strip(tf.strings.regex_replace(text, "  +", " "))

    @staticmethod
    def _split(tokenizer, texts):
        """`texts` `(B,)` -> words `(B, (W))` in their case."""
        return split_words(
            texts, lowercase=False, normalization=tokenizer.normalization
        )

    def _source_words(self, texts):
        """Source `texts` `(B,)` -> their words `(B, (W))`, pieces
        `(B, (W), (P))` and which words the rules protect `(Nw,)`."""
        words = self._split(self.source_tokenizer, texts)
        pieces = self.source_tokenizer.tokenize_words(words)
        return words, pieces, self._protected(words, pieces.values)

    def _protected(self, words, pieces):
        """Which words `(Nw,)` the rules protect, for `words` `(B, (W))`
        and their pieces `(Nw, (P))`."""
        flat = words.flat_values
        protected = tf.zeros_like(flat, tf.bool)
        if "numbers" in self.rules:
            protected |= tf.strings.regex_full_match(flat, _NUMBER)
        if "unknown" in self.rules:
            protected |= tf.reduce_any(tf.equal(pieces, UNK_ID), axis=1)
        if "names" in self.rules:
            position = tf.range(tf.size(flat, tf.int64)) - tf.gather(
                words.row_starts(), words.value_rowids()
            )
            before = tf.gather(flat, tf.maximum(tf.range(tf.size(flat)) - 1, 0))
            starts = tf.equal(position, 0) | tf.strings.regex_full_match(
                before, _SENTENCE_START
            )
            rare = pieces.row_lengths() >= 2
            protected |= (
                tf.strings.regex_full_match(flat, _NAME) & ~starts & rare
            )
        return protected


def _first_placeholder(tokenizer):
    """The id of `⦅0⦆` in `tokenizer`'s vocabulary, whose last `SLOTS`
    tokens must be the placeholders."""
    vocabulary = tokenizer.vocabulary
    tokens = [placeholder(slot) for slot in range(SLOTS)]
    if vocabulary[-SLOTS:] != tokens:
        raise ValueError(
            "Placeholders need a vocabulary that ends with the placeholder "
            f"tokens {tokens[0]}..{tokens[-1]} (`with_placeholders`): this "
            "model was trained without `placeholders`."
        )
    return len(vocabulary) - SLOTS


def _with_empty_column(words):
    """Ragged str `(B, (k))` -> dense `(B, k + 1)`, `""`-filled: a last
    column of `""` even where `k` is 0."""
    empty = tf.fill(tf.stack([words.nrows(), 1]), "")
    return tf.concat([words.to_tensor(""), empty], axis=1)


def _replace(pieces, marked, first, slot=None):
    """`pieces` `(B, (W), (P))` with each `marked` word `(Nw,)` one
    placeholder id: `first` plus its `slot` `(Nw,)` (by default its rank
    among the row's marked words; a slot past `SLOTS` keeps the word's
    pieces). Returns the ids `(B, (T))` and which words were replaced,
    bool `(B, (W))`."""
    words = pieces.values  # (Nw, (P))
    if slot is None:
        count = tf.cast(marked, tf.int32)
        before = tf.concat([[0], tf.cumsum(count)], 0)
        starts = tf.gather(before, pieces.row_starts())
        slot = tf.cumsum(count, exclusive=True) - tf.gather(
            starts, pieces.value_rowids()
        )
    marked &= slot < SLOTS
    word_of_piece = words.value_rowids()
    replaced = tf.gather(marked, word_of_piece)
    first_piece = tf.ragged.range(words.row_lengths()).flat_values == 0
    ids = tf.where(
        replaced, first + tf.gather(slot, word_of_piece), words.flat_values
    )
    kept = words.with_flat_values(~replaced | first_piece)
    words = tf.ragged.boolean_mask(words.with_flat_values(ids), kept)
    ids = tf.RaggedTensor.from_row_splits(words, pieces.row_splits)
    return ids.merge_dims(1, 2), pieces.with_values(marked)
