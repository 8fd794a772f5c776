"""A WordPiece subword tokenizer that trains on raw text and exports cleanly.

`SubwordTokenizer` learns a WordPiece vocabulary from an iterable of strings
(`SubwordTokenizer.train`) and maps strings to int32 ids and back. Everything
that runs per batch (`tokenize`, `detokenize`) uses only TensorFlow and
TensorFlow Text ops, so the tokenizer works eagerly, in `tf.data` pipelines,
inside a `tf.function`, and in a SavedModel that is served without Keras or
this package (register tensorflow-text's op libraries there with
`tf.load_op_library`; the ops used are `NormalizeUTF8`, `RegexSplitWithOffsets`
and `FastWordpieceTokenizeWithOffsets`).

Pipeline of `tokenize`:

0. Bytes that are not valid UTF-8 become U+FFFD (the replacement
   character, a symbol and so a word of its own, usually `[UNK]`), so no
   input makes the later ops fail.
1. Unicode normalization (`normalization`, NFKC by default) and, if asked,
   accent stripping (NFD, then every combining mark `\\p{Mn}` removed).
2. Lower-casing (`lowercase`, Unicode-aware).
3. Pre-tokenization into words: split on whitespace; every punctuation or
   symbol character (`\\p{P}`, `\\p{S}`, which covers most emoji) and every
   Han / Hiragana / Katakana character becomes a word of its own.
4. WordPiece: each word becomes its longest-match subwords from the
   vocabulary, continuation pieces spelled with the `##` prefix; a word that
   cannot be spelled becomes `[UNK]`.

`detokenize` inverts steps 4 and 3: pieces are glued back into words, words
are joined by single spaces, and then (`join_punctuation=True`, the default)
the spaces that step 3 put around punctuation are taken out again where
written text has none: before closing marks (`.,;:!?%)]}»”…`), after opening
marks (`([{¿¡«“`), inside words around an apostrophe or hyphen (`i'm`,
`C'est`, `twenty-one`), inside numbers (`3.5`, `10:30`), inside pairs of
straight quotes (`"hi"`, `'hi'`) and German quotes (`„Hallo“`), and
between Han / kana characters. So `"Hello, I'm here."` comes back as
`"hello, i'm here."` (the normalized form: lower-cased unless
`lowercase=False`).

The reserved tokens have fixed ids: `[PAD]` 0, `[UNK]` 1, `[START]` 2,
`[END]` 3; subwords start at 4.
"""

import collections
import json
import os
import time

import tensorflow as tf
import tensorflow_text as tf_text

from attention_zoo_apps.common import wordpiece_learner

# Re-exported: the reserved tokens' home (`token_ids`) is TensorFlow-free.
from attention_zoo_apps.common.token_ids import END  # noqa: F401
from attention_zoo_apps.common.token_ids import END_ID
from attention_zoo_apps.common.token_ids import PAD  # noqa: F401
from attention_zoo_apps.common.token_ids import PAD_ID
from attention_zoo_apps.common.token_ids import RESERVED_TOKENS
from attention_zoo_apps.common.token_ids import START  # noqa: F401
from attention_zoo_apps.common.token_ids import START_ID
from attention_zoo_apps.common.token_ids import UNK
from attention_zoo_apps.common.token_ids import UNK_ID

SUFFIX_INDICATOR = "##"
NORMALIZATION_FORMS = (None, "NFC", "NFKC", "NFD", "NFKD")
VOCABULARY_FILE = "vocabulary.txt"
OPTIONS_FILE = "tokenizer.json"

# Characters that become words of their own (kept as split pieces).
_ISOLATED = r"[\p{P}\p{S}]|[\p{Han}\p{Hiragana}\p{Katakana}]"
_DELIMITERS = r"\s+|" + _ISOLATED

# (pattern, rewrite) pairs that `detokenize` applies in order to undo the
# spaces pre-tokenization put around isolated characters. RE2 has no
# look-around, so rules that join a chain ("a - b - c") run twice.
_LETTER = r"[\pL\pN]"
_CJK = r"[\p{Han}\p{Hiragana}\p{Katakana}]"
_APOSTROPHE = "['’]"
_HYPHEN = f"({_LETTER}) - ({_LETTER})"
_OPENERS = r"[¿¡\p{Ps}\p{Pi}]"
_JOIN_RULES = (
    # Numbers: "3 . 50" -> "3.50", "10 : 30" -> "10:30".
    (r"([0-9]) ([.,:]) ([0-9])", r"\1\2\3"),
    # English contractions: "i ' m", "Don ' t", "WE ' LL", "it ' s".
    (f"({_LETTER}) ({_APOSTROPHE}) ((?i:s|t|m|d|re|ve|ll))\\b", r"\1\2\3"),
    # Elisions: "l ' homme", "C ' est", "qu ' il", "Qu ' il".
    (f"\\b((?i:[cdjlmnst]|qu)) ({_APOSTROPHE}) ({_LETTER})", r"\1\2\3"),
    # Quotes that open and close with one mark, in pairs from the left,
    # opening at the start or after a space (the apostrophes inside words
    # are joined above): '" hi "' -> '"hi"', "' ja '" -> "'ja'".
    ('(^|\\s)" ([^"]*?) "', r'\1"\2"'),
    ("(^|\\s)' ([^']*?) '", r"\1'\2'"),
    # Plural possessives, the apostrophes left: "the students ' books"
    # (two in one sentence read as a quoted pair: "the girls ' and
    # the boys ' books" comes back "the girls 'and the boys' books").
    (f"(s) ({_APOSTROPHE}) ", r"\1\2 "),
    (_HYPHEN, r"\1-\2"),
    (_HYPHEN, r"\1-\2"),
    # German quotes close with the marks that open English ones:
    # "„ Hallo “" -> "„Hallo“", "‚ ja ‘" -> "‚ja‘".
    ("„ ([^“„]*?) “", r"„\1“"),
    ("‚ ([^‘‚]*?) ‘", r"‚\1‘"),
    # No space before closing marks; none after an opening mark that
    # starts a word (a German closing “ already joined stays apart from
    # the next word). Chains ("( « a") take two passes.
    (r" ([.,;:!?%…。、！？：；\p{Pe}\p{Pf}])", r"\1"),
    (f"(^|\\s|{_OPENERS})({_OPENERS}) ", r"\1\2"),
    (f"(^|\\s|{_OPENERS})({_OPENERS}) ", r"\1\2"),
    (f"({_CJK}) ({_CJK})", r"\1\2"),
    (f"({_CJK}) ({_CJK})", r"\1\2"),
)


def _check_options(normalization, max_length):
    if normalization not in NORMALIZATION_FORMS:
        raise ValueError(
            f"`normalization` must be one of {NORMALIZATION_FORMS}. "
            f"Received: normalization={normalization!r}"
        )
    if max_length is not None and (
        not isinstance(max_length, int) or max_length < 1
    ):
        raise ValueError(
            "`max_length` must be None or a positive integer. "
            f"Received: max_length={max_length!r}"
        )


def split_words(
    strings, lowercase=True, normalization="NFKC", strip_accents=False
):
    """Steps 0-3 of the pipeline: `(B,)` strings -> ragged `(B, (words))`.

    Shared by training and tokenization, so the vocabulary is learned on
    exactly the words the tokenizer will see. TensorFlow Text ops only.
    """
    strings = tf.convert_to_tensor(strings, dtype=tf.string)
    # Invalid UTF-8 -> U+FFFD; valid text is unchanged.
    strings = tf.strings.unicode_transcode(
        strings, "UTF-8", "UTF-8", errors="replace"
    )
    if normalization is not None:
        strings = tf_text.normalize_utf8(strings, normalization)
    strings = _fold(strings, lowercase, strip_accents)
    return tf_text.regex_split(strings, _DELIMITERS, _ISOLATED)


def _fold(strings, lowercase, strip_accents):
    """Steps 1 (accent stripping) and 2 of the pipeline."""
    if strip_accents:
        strings = tf_text.normalize_utf8(strings, "NFD")
        strings = tf.strings.regex_replace(strings, r"\p{Mn}", "")
    if lowercase:
        strings = tf.strings.lower(strings, encoding="utf-8")
    return strings


class SubwordTokenizer(tf.Module):
    """WordPiece tokenizer: strings to int32 ids and back, exportable.

    A `tf.Module`: assign it to an attribute of the module you export (or
    call it inside the exported `tf.function`) and its WordPiece model and
    vocabulary are saved with the graph. See the module docstring for the
    pipeline and for what `detokenize` does to punctuation.

    Args:
        vocabulary: list of str, or the path of a text file with one token
            per line. The first four entries must be `[PAD]`, `[UNK]`,
            `[START]`, `[END]`; continuation pieces start with `##`.
        lowercase: bool, lower-case the text before splitting. Defaults to
            `True`.
        normalization: Unicode normalization form applied first, one of
            `"NFC"`, `"NFKC"`, `"NFD"`, `"NFKD"` or `None`. Defaults to
            `"NFKC"`.
        strip_accents: bool, remove combining marks (`"café"` -> `"cafe"`).
            Defaults to `False`.
        max_length: int or None, the most ids `tokenize` returns per string,
            START and END included (the text is cut, START/END are kept).
            Defaults to `None` (no limit).
        join_punctuation: bool, let `detokenize` remove the spaces that
            splitting put around punctuation (see the module docstring).
            Defaults to `True`.
        name: module name. Defaults to `None`.

    Call arguments (`tokenize`):
        strings: str tensor `(B,)` (or a scalar, giving one row).
        add_start: bool, prepend `[START]`.
        add_end: bool, append `[END]`.

    Returns:
        `tokenize`: `tf.RaggedTensor` int32 `(B, (T))`;
        `detokenize`: str tensor `(B,)`.

    Example:

    >>> tokenizer = SubwordTokenizer.train(
    ...     ["the cat sat", "the dog sat"] * 20, vocabulary_size=100
    ... )
    >>> ids = tokenizer.tokenize(["the cat"], add_start=True, add_end=True)
    >>> tokenizer.detokenize(ids).numpy()
    array([b'the cat'], dtype=object)

    Reference: Wu et al., 2016, "Google's Neural Machine Translation System"
    (WordPiece); Song et al., 2021, "Fast WordPiece Tokenization".
    """

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        normalization="NFKC",
        strip_accents=False,
        max_length=None,
        join_punctuation=True,
        name=None,
    ):
        super().__init__(name=name)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = _read_vocabulary(vocabulary)
        vocabulary = [str(token) for token in vocabulary]
        if tuple(vocabulary[:4]) != RESERVED_TOKENS:
            raise ValueError(
                f"`vocabulary` must start with {list(RESERVED_TOKENS)}. "
                f"Received: vocabulary[:4]={vocabulary[:4]}"
            )
        if len(set(vocabulary)) != len(vocabulary):
            duplicates = [
                t for t, n in collections.Counter(vocabulary).items() if n > 1
            ]
            raise ValueError(
                "`vocabulary` has duplicate tokens. "
                f"Received duplicates: {duplicates[:10]}"
            )
        _check_options(normalization, max_length)
        self._vocabulary = vocabulary
        self.lowercase = bool(lowercase)
        self.normalization = normalization
        self.strip_accents = bool(strip_accents)
        self.max_length = max_length
        self.join_punctuation = bool(join_punctuation)
        # Tracked by this module: its serialized FST model is a constant of
        # every graph that tokenizes.
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=vocabulary,
            suffix_indicator=SUFFIX_INDICATOR,
            unknown_token=UNK,
            no_pretokenization=True,
            token_out_type=tf.int32,
        )
        self._token_strings = tf.constant(vocabulary, dtype=tf.string)

    @classmethod
    def train(
        cls,
        texts,
        vocabulary_size=8000,
        lowercase=True,
        normalization="NFKC",
        strip_accents=False,
        max_length=None,
        join_punctuation=True,
        batch_size=8192,
        learn_params=None,
        verbose=False,
    ):
        """Learns a WordPiece vocabulary from an iterable of strings.

        Words are counted with the same splitting as `tokenize` (batched
        TensorFlow Text ops), then the vocabulary is learned with TensorFlow
        Text's WordPiece learner (the one behind `bert_vocab_from_dataset`
        and keras-hub's `compute_word_piece_vocabulary`) for a token count
        threshold. The threshold search differs from the library's
        `learn`: the lowest threshold is tried first (on most corpora it
        already fits, as on spa-eng, one learning pass instead of ~15), then
        an interpolation search on the log threshold; the library's
        linear bisection starts at half
        the largest word count and takes several times longer.

        Args:
            texts: iterable of str (a list, a generator, a NumPy array).
            vocabulary_size: int, the largest vocabulary wanted, reserved
                tokens included; the learner stops within 5 % below it, and
                a small corpus may give fewer.
            lowercase, normalization, strip_accents, max_length,
                join_punctuation: as in the constructor.
            batch_size: int, strings split per TensorFlow call.
            learn_params: dict of overrides for the learner's parameters
                (`wordpiece_tokenizer_learner_lib.Params` of TensorFlow
                Text), e.g. `{"lower_thresh": 2}`: the smallest count a
                token needs to be kept (default 10).
            verbose: bool, print the counting and learning times.

        Returns:
            A `SubwordTokenizer`.
        """
        if not isinstance(vocabulary_size, int) or vocabulary_size <= 4:
            raise ValueError(
                "`vocabulary_size` must be an integer larger than 4. "
                f"Received: vocabulary_size={vocabulary_size!r}"
            )
        _check_options(normalization, max_length)
        if isinstance(texts, (str, bytes)):
            raise ValueError(
                "`texts` must be an iterable of strings, not one string. "
                f"Received: texts={texts[:40]!r}"
            )
        started = time.perf_counter()
        counts = wordpiece_learner.count_words(
            texts,
            lambda batch: split_words(
                batch, lowercase, normalization, strip_accents
            ),
            batch_size,
        )
        counted = time.perf_counter()
        vocabulary, evaluations = wordpiece_learner.learn_vocabulary(
            counts,
            vocabulary_size,
            RESERVED_TOKENS,
            SUFFIX_INDICATOR,
            **(learn_params or {}),
        )
        if verbose:
            print(
                f"SubwordTokenizer.train: {len(counts)} distinct words counted "
                f"in {counted - started:.1f}s, {len(vocabulary)} tokens "
                f"learned in {time.perf_counter() - counted:.1f}s "
                f"({evaluations} thresholds tried)"
            )
        return cls(
            vocabulary,
            lowercase=lowercase,
            normalization=normalization,
            strip_accents=strip_accents,
            max_length=max_length,
            join_punctuation=join_punctuation,
        )

    @property
    def vocabulary(self):
        """The tokens, a list of str; the index is the id."""
        return list(self._vocabulary)

    @property
    def vocabulary_size(self):
        return len(self._vocabulary)

    def id_to_token(self, token_id):
        """The token string of one id (Python int)."""
        token_id = int(token_id)
        if not 0 <= token_id < len(self._vocabulary):
            raise ValueError(
                f"`token_id` must be in [0, {len(self._vocabulary)}). "
                f"Received: token_id={token_id}"
            )
        return self._vocabulary[token_id]

    def token_to_id(self, token):
        """The id of one token string; `[UNK]`'s id when absent."""
        try:
            return self._vocabulary.index(token)
        except ValueError:
            return UNK_ID

    def tokenize(self, strings, add_start=False, add_end=False):
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        if strings.shape.rank == 0:
            return self.tokenize(strings[tf.newaxis], add_start, add_end)[0]
        words = split_words(
            strings, self.lowercase, self.normalization, self.strip_accents
        )
        ids = self._wordpiece.tokenize(words)  # (B, (words), (pieces))
        ids = tf.cast(ids.merge_dims(1, 2), tf.int32)  # (B, (T))
        if self.max_length is not None:
            keep = max(self.max_length - int(add_start) - int(add_end), 0)
            ids = ids[:, :keep]
        batch = ids.nrows()
        pieces = [ids]
        if add_start:
            pieces.insert(0, _column(START_ID, batch))
        if add_end:
            pieces.append(_column(END_ID, batch))
        if len(pieces) > 1:
            ids = tf.concat(pieces, axis=1)
        return ids

    def tokenize_words(self, words):
        """Words `(B, (W))` as `split_words(strings, lowercase=False,
        normalization=self.normalization)` gives them, in their case
        -> their pieces, int32 `(B, (W), (P))` (an `[UNK]` piece for a
        word the vocabulary cannot spell): lower-cased and stripped of
        accents first as the tokenizer's options say. For callers that
        need each word's pieces (`translation.placeholders`)."""
        folded = _fold(words.flat_values, self.lowercase, self.strip_accents)
        ids = self._wordpiece.tokenize(words.with_flat_values(folded))
        return tf.cast(ids, tf.int32)

    def detokenize(self, ids):
        """Ids `(B, T)` (dense or ragged) -> str `(B,)`.

        Stops at the first `[END]`, drops `[PAD]` and `[START]`, glues `##`
        pieces to the previous piece, joins words with one space and, with
        `join_punctuation`, removes the spaces around punctuation. Other
        reserved tokens are written out (`[UNK]`); ids outside the
        vocabulary read as `[UNK]`.
        """
        if isinstance(ids, tf.RaggedTensor):
            ids = ids.to_tensor(PAD_ID)
        ids = tf.cast(tf.convert_to_tensor(ids), tf.int32)
        if ids.shape.rank == 1:
            return self.detokenize(ids[tf.newaxis])[0]
        size = tf.shape(self._token_strings)[0]
        ids = tf.where((ids >= 0) & (ids < size), ids, UNK_ID)
        before_end = tf.cumsum(tf.cast(ids == END_ID, tf.int32), axis=1) == 0
        keep = before_end & (ids != PAD_ID) & (ids != START_ID)
        ids = tf.ragged.boolean_mask(ids, keep)  # (B, (T))
        tokens = ids.with_flat_values(
            tf.gather(self._token_strings, ids.flat_values)
        )
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        text = tf.strings.regex_replace(text, " " + SUFFIX_INDICATOR, "")
        text = tf.strings.regex_replace(text, "^" + SUFFIX_INDICATOR, "")
        if self.join_punctuation:
            for pattern, rewrite in _JOIN_RULES:
                text = tf.strings.regex_replace(text, pattern, rewrite)
        return text

    def get_config(self):
        return {
            "vocabulary": self.vocabulary,
            "lowercase": self.lowercase,
            "normalization": self.normalization,
            "strip_accents": self.strip_accents,
            "max_length": self.max_length,
            "join_punctuation": self.join_punctuation,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def save(self, directory):
        """Writes `vocabulary.txt` (one token a line) and `tokenizer.json`."""
        os.makedirs(directory, exist_ok=True)
        with open(
            os.path.join(directory, VOCABULARY_FILE), "w", encoding="utf-8"
        ) as f:
            f.write("".join(token + "\n" for token in self._vocabulary))
        options = self.get_config()
        del options["vocabulary"]
        options["vocabulary_file"] = VOCABULARY_FILE
        with open(
            os.path.join(directory, OPTIONS_FILE), "w", encoding="utf-8"
        ) as f:
            json.dump(options, f, indent=2)

    @classmethod
    def load(cls, directory):
        """Reads what `save` wrote."""
        with open(os.path.join(directory, OPTIONS_FILE), encoding="utf-8") as f:
            options = json.load(f)
        vocabulary_file = options.pop("vocabulary_file", VOCABULARY_FILE)
        return cls(os.path.join(directory, vocabulary_file), **options)


def _column(token_id, batch):
    """A ragged `(batch, 1)` int32 column of `token_id`."""
    column = tf.fill(tf.stack([batch, 1]), tf.constant(token_id, tf.int32))
    return tf.RaggedTensor.from_tensor(column)


def _read_vocabulary(path):
    with open(path, encoding="utf-8") as f:
        tokens = [line.rstrip("\r\n") for line in f]
    while tokens and not tokens[-1]:
        tokens.pop()
    for line_number, token in enumerate(tokens, 1):
        if not token or token != token.strip():
            raise ValueError(
                f"{path}:{line_number}: empty token or surrounding "
                f"whitespace in a vocabulary file: {token!r}"
            )
    return tokens
