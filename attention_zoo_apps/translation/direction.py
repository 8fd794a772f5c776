"""Which way a pairs file runs: its columns checked before training.

`train translation --init-from MODEL --data FILE` keeps the model's
vocabularies, learned from its own source and target languages: the source
vocabulary spells a sentence of the source language in about one piece a
word and one of the target language in two or more, the target vocabulary
the other way round (translation-spa-eng, on 200 Tatoeba pairs: Spanish
1.1 pieces a word under its source vocabulary, 2.5 under its target one;
English 2.5 and 1.1; numbers 3.8 under both). `check_columns` scores a
sample of the file's two columns under both vocabularies before any
training and refuses (a usage error, one line naming the columns and
`--source-column/--target-column`) a file whose source column reads like
the model's target language or holds ids, and likewise for the target
column. A column that reads like neither of the model's languages (a
third language the user adapts the model to) is only warned about, on
stderr. From scratch there is no vocabulary to ask: it only warns when a
column holds ids (numbers or one-word codes) rather than sentences.
"""

import dataclasses
import sys

import numpy as np

from attention_zoo_apps.common.flag_checks import UsageError
from attention_zoo_apps.common.token_ids import UNK_ID
from attention_zoo_apps.common.wordpiece import split_words

# Pairs scored: enough for a clear average, a single small batch.
SAMPLE_PAIRS = 200
# An `[UNK]` piece counts as this many pieces: a word the vocabulary cannot
# spell at all fits it worse than one spelled letter by letter.
UNKNOWN_PIECES = 4
# A column reads like one side's language when the other side's
# vocabulary needs this many times more pieces a word for it (measured:
# over 2 for the right language, about 1 for numbers or a third language).
CLEAR_RATIO = 1.25
# A column is taken for ids when this share of its sampled values are.
ID_SHARE = 0.8


@dataclasses.dataclass(frozen=True)
class ColumnReading:
    """How a model's vocabularies spell one column of a sample.

    Attributes:
        language: `"source"` or `"target"`, the model's language the
            column reads like, or `None` (neither: ids, another language).
        source_pieces: float, pieces a word under the source vocabulary.
        target_pieces: float, pieces a word under the target vocabulary.
    """

    language: object
    source_pieces: float
    target_pieces: float

    def describe(self):
        return f"{self.source_pieces:.1f}/{self.target_pieces:.1f}"


def sample(pairs, count=SAMPLE_PAIRS):
    """At most `count` pairs, evenly spaced over `pairs` (deterministic:
    a file sorted by length or topic is sampled all along)."""
    pairs = list(pairs)
    if len(pairs) <= count:
        return pairs
    return [pairs[i] for i in np.linspace(0, len(pairs) - 1, count, dtype=int)]


def pieces_per_word(tokenizer, texts):
    """The subword pieces `tokenizer` spells `texts` in, per word, an
    `[UNK]` counting `UNKNOWN_PIECES` (0.0 for texts without words)."""
    words = split_words(
        texts,
        tokenizer.lowercase,
        tokenizer.normalization,
        tokenizer.strip_accents,
    )
    count = int(words.flat_values.shape[0])
    if not count:
        return 0.0
    ids = tokenizer.tokenize(texts).flat_values.numpy()
    unknown = int(np.sum(ids == UNK_ID))
    return (len(ids) + (UNKNOWN_PIECES - 1) * unknown) / count


def read_column(source_tokenizer, target_tokenizer, texts):
    """The `ColumnReading` of `texts` under a model's two vocabularies."""
    texts = list(texts)
    in_source = pieces_per_word(source_tokenizer, texts)
    in_target = pieces_per_word(target_tokenizer, texts)
    language = None
    if in_target >= CLEAR_RATIO * in_source and in_target > 0:
        language = "source"
    elif in_source >= CLEAR_RATIO * in_target and in_source > 0:
        language = "target"
    return ColumnReading(language, in_source, in_target)


def looks_like_id(text):
    """Whether `text` is an id rather than a sentence: no letter at all
    (`"1234"`, `"#12"`), or one word with a digit (`"A-0012"`)."""
    text = text.strip()
    if not any(character.isalpha() for character in text):
        return True
    return len(text.split()) == 1 and any(c.isdigit() for c in text)


def id_column(texts):
    """An example value when at least `ID_SHARE` of `texts` look like
    ids (`looks_like_id`), else None."""
    texts = list(texts)
    ids = [text for text in texts if looks_like_id(text)]
    if texts and len(ids) >= ID_SHARE * len(texts):
        return ids[0]
    return None


def column_names(args):
    """`(source, target)`: how the columns of `--data` are named in
    messages (the flags for a tab-separated file, the keys for JSONL)."""
    if args.data.endswith(".jsonl"):
        return 'its "source" field', 'its "target" field'
    return (
        f"column {args.source_column} (--source-column)",
        f"column {args.target_column} (--target-column)",
    )


def _hint(args, reversed_columns):
    if args.data.endswith(".jsonl"):
        return (
            'swap the "source" and "target" fields'
            if reversed_columns
            else 'put the sentences the model reads under "source" and '
            'their translations under "target"'
        )
    if reversed_columns:
        return (
            f"give --source-column {args.target_column} "
            f"--target-column {args.source_column}"
        )
    return (
        "give --source-column N for the sentences the model reads and "
        "--target-column N for their translations (0-based)"
    )


def direction_problem(source_tokenizer, target_tokenizer, pairs, args):
    """`(refuse, message)`: the one-line account of fine-tuning a model
    with these tokenizers on `pairs` (read from `args.data` by `args`'
    columns), or `(False, None)` when its source column reads like the
    model's source language and its target column like its target
    language. `refuse` is True when a column reads like the other side's
    language or holds ids; a column of neither language (e.g. a third
    language) only deserves a warning."""
    pairs = sample(pairs)
    readings = [
        read_column(
            source_tokenizer, target_tokenizer, [pair[i] for pair in pairs]
        )
        for i in (0, 1)
    ]
    if [reading.language for reading in readings] == ["source", "target"]:
        return False, None
    refuse = False
    names = column_names(args)
    sides = ("source", "target")
    reversed_columns = [r.language for r in readings] == ["target", "source"]
    problems = []
    for i, (name, side, reading) in enumerate(zip(names, sides, readings)):
        if reading.language == side:
            continue
        if reading.language is None:
            example = id_column(pair[i] for pair in pairs)
            what = (
                f"ids (e.g. {example!r})"
                if example is not None
                else "neither of the model's languages"
            )
            refuse = refuse or example is not None
        else:
            what = f"the model's {reading.language} language"
            refuse = True
        problems.append(f"{name} reads like {what}")
    scores = ", ".join(
        f"{name.split(' (')[0]} {reading.describe()}"
        for name, reading in zip(names, readings)
    )
    return refuse, (
        f"--data {args.data} does not fit --init-from {args.init_from}: "
        f"{'; '.join(problems)} (pieces a word under the model's source/"
        f"target vocabularies, {len(pairs)} pairs: {scores}); "
        f"{_hint(args, reversed_columns)}"
    )


def check_columns(args, translator, pairs):
    """Before training on `--data`: with `--init-from`, a `UsageError`
    when the pairs run against the model or hold ids, a warning on stderr
    when a column reads like neither of its languages
    (`direction_problem`); from scratch, a warning for a column of ids."""
    if not args.data:
        return  # the generated pairs
    if getattr(args, "init_from", None):
        refuse, problem = direction_problem(
            translator.source_tokenizer,
            translator.target_tokenizer,
            pairs,
            args,
        )
        if refuse:
            raise UsageError(problem)
        if problem:
            print(f"warning: {problem}", file=sys.stderr)
        return
    pairs = sample(pairs)
    for i, name in enumerate(column_names(args)):
        example = id_column(pair[i] for pair in pairs)
        if example is not None:
            print(
                f"warning: --data {args.data}: {name} holds ids, not "
                f"sentences (e.g. {example!r}); {_hint(args, False)}",
                file=sys.stderr,
            )
