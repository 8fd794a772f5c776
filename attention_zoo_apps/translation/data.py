"""Sentence pairs for translation: loaders, a split, tf.data.

- `load_tsv_pairs` reads the Tatoeba / ManyThings Anki layout
  (`english<TAB>other<TAB>attribution`); `load_jsonl_pairs` reads
  `{"source": ..., "target": ...}` lines. Errors name the file and line.
- `make_synthetic_pairs` (from `attention_zoo_apps.translation.synthetic`,
  re-exported here) generates a language pair with a known alignment.
- `split_pairs` makes a deterministic train / validation / test split.
- `make_translation_dataset` tokenizes, shifts and pads batches for teacher
  forcing.

Sequence conventions (shared with the models and decoding; ids from
`attention_zoo_apps.common.wordpiece`: PAD 0, UNK 1, START 2, END 3):

- `source`: the source subwords, no START; END appended only with
  `source_end=True` (off by default: the encoder needs only the PAD mask, and
  then word `i` of a synthetic source is token `i`).
- `target_in`: START + target subwords (what the decoder reads).
- `target_out`: target subwords + END (what it predicts); position `j` of
  `target_out` is decoding step `j`, i.e. row `j` of the decoders'
  `attention` output.
"""

import numpy as np
import tensorflow as tf

from attention_zoo.checks import check_positive_int
from attention_zoo_apps.common.batch_padding import pad_to_length_multiple
from attention_zoo_apps.common.loaders import read_jsonl
from attention_zoo_apps.common.loaders import read_tsv
from attention_zoo_apps.common.token_ids import END_ID
from attention_zoo_apps.common.token_ids import PAD_ID
from attention_zoo_apps.common.token_ids import START_ID
from attention_zoo_apps.translation.synthetic import SyntheticPairs
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs

__all__ = [
    "ENGLISH_COLUMN",
    "OTHER_COLUMN",
    "SyntheticPairs",
    "encode_sources",
    "load_jsonl_pairs",
    "load_tsv_pairs",
    "make_synthetic_pairs",
    "make_translation_dataset",
    "split_pairs",
]

# Column layout of the ManyThings / Tatoeba files: English first.
ENGLISH_COLUMN = 0
OTHER_COLUMN = 1


def load_tsv_pairs(
    path, source_column=0, target_column=1, encoding="utf-8", max_pairs=None
):
    """Reads `(source, target)` pairs from a tab-separated file.

    The ManyThings / Tatoeba files (`/work/shared/data/spa-eng/spa.txt.gz`)
    hold `english<TAB>spanish[<TAB>attribution]`: the defaults give
    English -> Spanish; for Spanish -> English pass `source_column=1,
    target_column=0`. Extra columns are ignored, blank lines skipped, fields
    stripped; `.gz` files are decompressed.

    Args:
        path: str or path-like.
        source_column: int, 0-based column of the source sentence.
            Defaults to `0`.
        target_column: int, 0-based column of the target sentence.
            Defaults to `1`.
        encoding: str. Defaults to `"utf-8"`.
        max_pairs: int or None, read only the first pairs. Defaults to
            `None` (all).

    Returns:
        A list of `(source, target)` str tuples.

    Raises:
        ValueError: `path:line: ...` (1-based line) for a line with too few
            columns or an empty side.
    """
    for name, column in (
        ("source_column", source_column),
        ("target_column", target_column),
    ):
        if not isinstance(column, int) or column < 0:
            raise ValueError(
                f"`{name}` must be a non-negative integer. "
                f"Received: {name}={column!r}"
            )
    if source_column == target_column:
        raise ValueError(
            "`source_column` and `target_column` must differ. "
            f"Received: source_column={source_column}, "
            f"target_column={target_column}"
        )
    return read_tsv(
        path, (source_column, target_column), encoding, max_rows=max_pairs
    )


def load_jsonl_pairs(
    path,
    source_key="source",
    target_key="target",
    encoding="utf-8",
    max_pairs=None,
):
    """Reads `(source, target)` pairs from a JSON-lines file.

    Args:
        path: str or path-like (`.gz` allowed); one JSON object a line.
        source_key: str. Defaults to `"source"`.
        target_key: str. Defaults to `"target"`.
        encoding: str. Defaults to `"utf-8"`.
        max_pairs: int or None. Defaults to `None` (all).

    Returns:
        A list of `(source, target)` str tuples.

    Raises:
        ValueError: `path:line: ...` for invalid JSON, a missing key or an
            empty or non-string value.
    """
    return read_jsonl(
        path, (source_key, target_key), encoding, max_rows=max_pairs
    )


def split_pairs(
    pairs, validation_fraction=0.1, test_fraction=0.1, seed=0, group_by=None
):
    """Shuffles and splits pairs into train, validation and test lists.

    Deterministic: a NumPy generator seeded with `seed` permutes the pairs
    (or the groups), the first `round(n * test_fraction)` go to test, the
    next `round(n * validation_fraction)` to validation, the rest to train.
    Within each split the original order is kept.

    Args:
        pairs: list of `(source, target)` tuples.
        validation_fraction: float in [0, 1). Defaults to `0.1`.
        test_fraction: float in [0, 1). Defaults to `0.1`.
        seed: int. Defaults to `0`.
        group_by: `None`, `"source"` or `"target"`: keep all pairs with the
            same source (or target) sentence in one split, so a sentence
            with several translations (common in Tatoeba) cannot leak from
            train into test. Fractions then count groups. Defaults to
            `None` (split single pairs).

    Returns:
        A tuple `(train, validation, test)` of lists of pairs.
    """
    for name, value in (
        ("validation_fraction", validation_fraction),
        ("test_fraction", test_fraction),
    ):
        if not 0.0 <= value < 1.0:
            raise ValueError(
                f"`{name}` must be in [0, 1). Received: {name}={value}"
            )
    if validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            "`validation_fraction + test_fraction` must be below 1. "
            f"Received: validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}"
        )
    if group_by not in (None, "source", "target"):
        raise ValueError(
            "`group_by` must be None, 'source' or 'target'. "
            f"Received: group_by={group_by!r}"
        )
    pairs = list(pairs)
    if group_by is None:
        keys = list(range(len(pairs)))
    else:
        side = 0 if group_by == "source" else 1
        keys = [pair[side] for pair in pairs]
    groups = list(dict.fromkeys(keys))  # first-seen order
    order = np.random.default_rng(seed).permutation(len(groups))
    num_test = int(round(len(groups) * test_fraction))
    num_validation = int(round(len(groups) * validation_fraction))
    split_of = {}
    for rank, index in enumerate(order):
        if rank < num_test:
            split_of[groups[index]] = 2
        elif rank < num_test + num_validation:
            split_of[groups[index]] = 1
        else:
            split_of[groups[index]] = 0
    splits = ([], [], [])
    for key, pair in zip(keys, pairs):
        splits[split_of[key]].append(pair)
    return splits


def make_translation_dataset(
    pairs,
    source_tokenizer,
    target_tokenizer,
    batch_size=64,
    max_length=64,
    shuffle=True,
    seed=0,
    source_end=False,
    pad_to_max_length=False,
    drop_remainder=False,
    length_multiple=None,
    placeholders=None,
):
    """A `tf.data.Dataset` of teacher-forcing batches.

    Each element is `({"source": (B, Ts), "target_in": (B, Tt)},
    target_out (B, Tt))`, all int32, padded with PAD (0) to the longest
    sequence of the batch (or to `max_length`). `target_in` = START +
    target, `target_out` = target + END (see the module docstring).
    Sequences longer than `max_length` are cut: the source to `max_length`
    tokens (END kept last with `source_end`), the target to
    `max_length - 1` subwords so that both `target_in` and `target_out`
    (which still ends in END) have at most `max_length` tokens.

    Args:
        pairs: list of `(source, target)` str tuples (or a
            `SyntheticPairs`).
        source_tokenizer, target_tokenizer: `SubwordTokenizer`s (anything
            with `tokenize(strings) -> tf.RaggedTensor`).
        batch_size: int. Defaults to `64`.
        max_length: int >= 2. Defaults to `64`.
        shuffle: bool, reshuffle the pairs each epoch. Defaults to `True`.
        seed: int, the shuffle seed. Defaults to `0`.
        source_end: bool, append END to sources. Defaults to `False`.
        pad_to_max_length: bool, pad every batch to exactly `max_length`
            (fixed shapes: one XLA compilation). Defaults to `False`.
        drop_remainder: bool, drop a last smaller batch. Defaults to
            `False`.
        length_multiple: int or None, pad each batch's lengths up to a
            multiple of it (at most `max_length`): a few shapes rather
            than one per longest sequence, for backends that compile one
            step per shape (JAX). Defaults to `None` (the longest).
        placeholders: a `placeholders.Placeholders` whose tokenizers
            tokenize the pairs (`protect_pairs`: the words copied from
            source to target as placeholders), or `None`. Defaults to
            `None`.

    Returns:
        A batched, prefetched `tf.data.Dataset`.
    """
    if isinstance(pairs, SyntheticPairs):
        pairs = pairs.pairs
    check_positive_int("batch_size", batch_size)
    if not isinstance(max_length, int) or max_length < 2:
        raise ValueError(
            "`max_length` must be an integer >= 2. "
            f"Received: max_length={max_length!r}"
        )
    pairs = list(pairs)
    if not pairs:
        raise ValueError("`pairs` is empty.")
    sources = [source for source, _ in pairs]
    targets = [target for _, target in pairs]
    dataset = tf.data.Dataset.from_tensor_slices((sources, targets))
    if shuffle:
        dataset = dataset.shuffle(
            len(pairs), seed=seed, reshuffle_each_iteration=True
        )
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    pad_shape = [None, max_length] if pad_to_max_length else None

    def encode(source, target):
        if placeholders is None:
            source_ids = source_tokenizer.tokenize(source)  # (B, (Ts))
            target_ids = target_tokenizer.tokenize(target)  # (B, (Tt))
        else:
            source_ids, target_ids = placeholders.protect_pairs(source, target)
        source = source_ids
        if source_end:
            source = tf.concat(
                [source[:, : max_length - 1], _column(END_ID, source)], 1
            )
        else:
            source = source[:, :max_length]
        target = target_ids[:, : max_length - 1]
        target_in = tf.concat([_column(START_ID, target), target], 1)
        target_out = tf.concat([target, _column(END_ID, target)], 1)

        def pad(ragged):
            dense = _pad(ragged, pad_shape)
            if length_multiple and not pad_to_max_length:
                dense = pad_to_length_multiple(
                    dense, length_multiple, max_length
                )
            return dense

        inputs = {"source": pad(source), "target_in": pad(target_in)}
        return inputs, pad(target_out)

    dataset = dataset.map(
        tf.autograph.experimental.do_not_convert(encode),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def encode_sources(source_tokenizer, texts, max_length, placeholders=None):
    """Source strings -> padded int32 ids `(B, Ts)`, as in training.

    The same convention as `make_translation_dataset` with its defaults (no
    START or END, cut to `max_length` tokens, PAD-filled to the longest);
    with `placeholders`, its protected words are placeholders
    (`Placeholders.protect`).
    """
    if placeholders is None:
        source = source_tokenizer.tokenize(texts)
    else:
        source = placeholders.protect(texts)[0]
    return _pad(source[:, :max_length], None)


def _column(token_id, ragged):
    """A ragged int32 `(B, 1)` column of `token_id`, B = `ragged.nrows()`."""
    batch = tf.cast(ragged.nrows(), tf.int32)
    column = tf.fill(tf.stack([batch, 1]), tf.constant(token_id, tf.int32))
    return tf.RaggedTensor.from_tensor(column)


def _pad(ragged, shape):
    """Ragged `(B, (T))` -> dense int32 `(B, T)`, PAD-filled."""
    return tf.cast(ragged, tf.int32).to_tensor(PAD_ID, shape=shape)
