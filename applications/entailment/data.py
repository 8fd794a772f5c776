"""Sentence pairs for entailment: loaders, a split, a synthetic set.

- `load_snli_jsonl` reads the official SNLI / MultiNLI JSON lines;
  `load_three_files` and `load_snli_split` read the InferSent / e-SNLI layout
  (`s1.<split>`, `s2.<split>`, `labels.<split>`, one sentence a line);
  `load_sick` reads SICK's `SICK.txt`; `load_tsv` reads any tab-separated
  file. `load_examples` picks one of them for a path (the CLI's `--data`).
  Errors name the file and line (`path:line: ...`); `.gz` files are
  decompressed.
- `split_examples` makes a train / validation split in which no premise
  appears on both sides.
- `make_synthetic_entailment` generates a small set whose labels follow from
  how hypothesis words relate to the premise words they align to, with those
  decisive word pairs as a ground truth for the attention.

Labels are class ids into `LABELS`. Every loader drops pairs labelled `"-"`
(SNLI's "no gold label") and counts them in `EntailmentExamples.skipped`.
"""

import dataclasses
import os

import numpy as np

from applications.common.loaders import iter_lines
from applications.common.loaders import line_error
from applications.common.loaders import parse_jsonl_line

LABELS = ("entailment", "neutral", "contradiction")  # class id = index
NO_LABEL = "-"  # SNLI: the annotators did not agree
FORMATS = ("auto", "snli-jsonl", "three-files", "sick", "tsv")
SICK_SPLITS = ("train", "trial", "test")
# SICK's header names of the columns `load_sick` reads.
SICK_COLUMNS = ("sentence_A", "sentence_B", "entailment_label")
SICK_SPLIT_COLUMN = "SemEval_set"
# Third fields that mark the first line of a tab-separated file a header.
TSV_LABEL_NAMES = ("label", "gold_label")


@dataclasses.dataclass(frozen=True)
class EntailmentExamples:
    """Premise / hypothesis pairs with their labels.

    Attributes:
        premises: list of str.
        hypotheses: list of str, line-aligned with `premises`.
        labels: list of int, class ids into `LABELS`.
        skipped: int, examples the loader dropped (SNLI's gold label
            `"-"`). Defaults to `0`.
    """

    premises: list
    hypotheses: list
    labels: list
    skipped: int = 0

    def __post_init__(self):
        lengths = {len(self.premises), len(self.hypotheses), len(self.labels)}
        if len(lengths) != 1:
            raise ValueError(
                "`premises`, `hypotheses` and `labels` must have the same "
                f"length. Received: {len(self.premises)}, "
                f"{len(self.hypotheses)} and {len(self.labels)}"
            )

    def __len__(self):
        return len(self.labels)

    def select(self, indices):
        """The examples at `indices` (ints, in that order); `skipped=0`."""
        indices = [int(i) for i in indices]
        return EntailmentExamples(
            premises=[self.premises[i] for i in indices],
            hypotheses=[self.hypotheses[i] for i in indices],
            labels=[self.labels[i] for i in indices],
        )

    def label_counts(self):
        """`{"entailment": n, "neutral": n, "contradiction": n}`."""
        counts = np.bincount(
            np.asarray(self.labels, "int64"), minlength=len(LABELS)
        )
        return {name: int(counts[i]) for i, name in enumerate(LABELS)}


def label_id(label, path=None, line_number=None):
    """The class id of a label name, case-insensitive.

    Accepts the names in `LABELS` in any case (so SICK's `ENTAILMENT`,
    `NEUTRAL`, `CONTRADICTION` too), surrounding whitespace ignored.

    Args:
        label: str.
        path: str or path-like or None, the file the label came from (for
            the error message). Defaults to `None`.
        line_number: int or None, its 1-based line. Defaults to `None`.

    Returns:
        An int in `range(len(LABELS))`.

    Raises:
        ValueError: for anything else, naming the value (and starting with
            `path:line:` when both are given).

    Example:

    >>> label_id("CONTRADICTION")
    2
    """
    name = label.strip().lower() if isinstance(label, str) else None
    if name in LABELS:
        return LABELS.index(name)
    if path is not None and line_number is not None:
        raise line_error(
            path,
            line_number,
            f"unknown label {label!r}; expected one of {LABELS} (any case)",
        )
    raise ValueError(
        f"`label` must be one of {LABELS} (any case). Received: label={label!r}"
    )


class _Builder:
    """Collects examples; drops `"-"` labels and counts them."""

    def __init__(self, max_examples):
        if max_examples is not None and (
            not isinstance(max_examples, int) or max_examples < 0
        ):
            raise ValueError(
                "`max_examples` must be None or a non-negative integer. "
                f"Received: max_examples={max_examples!r}"
            )
        self.max_examples = max_examples
        self.premises, self.hypotheses, self.labels = [], [], []
        self.skipped = 0

    def full(self):
        return (
            self.max_examples is not None
            and len(self.labels) >= self.max_examples
        )

    def add(self, premise, hypothesis, label, path, line_number):
        if label.strip() == NO_LABEL:
            self.skipped += 1
            return
        self.labels.append(label_id(label, path, line_number))
        self.premises.append(premise)
        self.hypotheses.append(hypothesis)

    def build(self):
        return EntailmentExamples(
            self.premises, self.hypotheses, self.labels, self.skipped
        )


def load_snli_jsonl(path, max_examples=None):
    """Reads SNLI or MultiNLI JSON lines (`sentence1`, `sentence2`,
    `gold_label`).

    Other fields are ignored. Records whose `gold_label` is `"-"` are dropped
    and counted in `skipped`.

    Args:
        path: str or path-like (`.gz` allowed), one JSON object a line.
        max_examples: int or None, stop after this many kept examples.
            Defaults to `None` (all).

    Returns:
        An `EntailmentExamples`.

    Raises:
        ValueError: `path:line: ...` for invalid JSON, a missing key, an
            empty or non-string sentence or an unknown label.
    """
    builder = _Builder(max_examples)
    keys = ("sentence1", "sentence2", "gold_label")
    for line_number, text in iter_lines(path):
        if builder.full():
            break
        row = parse_jsonl_line(path, line_number, text, keys)
        builder.add(*row, path, line_number)
    return builder.build()


_THREE = ("premise", "hypothesis", "label")


def load_three_files(
    premise_path, hypothesis_path, label_path, max_examples=None
):
    """Reads line-aligned premise, hypothesis and label files.

    The InferSent / e-SNLI layout: line `i` of each file belongs to example
    `i`. Trailing whitespace (the e-SNLI files end each line with a space)
    and CR are stripped; `.gz` files are decompressed. Labels `"-"` are
    dropped and counted in `skipped`.

    Args:
        premise_path: str or path-like.
        hypothesis_path: str or path-like.
        label_path: str or path-like.
        max_examples: int or None, stop after this many kept examples.
            Defaults to `None` (all).

    Returns:
        An `EntailmentExamples`.

    Raises:
        ValueError: `path:line: ...` for an empty sentence or label, an
            unknown label or an undecodable line; when the files have
            different lengths, `path:line:` of the first line missing from
            a file, naming the files.
    """
    builder = _Builder(max_examples)
    paths = (premise_path, hypothesis_path, label_path)
    streams = [iter_lines(p, skip_blank=False) for p in paths]
    line_number = 0
    while not builder.full():
        line_number += 1
        lines = [next(stream, None) for stream in streams]
        if all(line is None for line in lines):
            break
        if any(line is None for line in lines):
            ended = [os.fspath(p) for p, x in zip(paths, lines) if x is None]
            going = [os.fspath(p) for p, x in zip(paths, lines) if x]
            raise line_error(
                ended[0],
                line_number,
                "the premise, hypothesis and label files must have the same "
                f"number of lines, but {' and '.join(ended)} "
                f"{'ends' if len(ended) == 1 else 'end'} after line "
                f"{line_number - 1} while {' and '.join(going)} "
                f"{'goes' if len(going) == 1 else 'go'} on",
            )
        fields = []
        for path, name, (_, text) in zip(paths, _THREE, lines):
            if not text.strip():
                raise line_error(path, line_number, f"empty {name}")
            fields.append(text.strip())
        builder.add(*fields, label_path, line_number)
    return builder.build()


def _split_file(directory, prefix, split):
    """`directory/prefix.split`, or its `.gz`; None if neither exists."""
    for name in (f"{prefix}.{split}", f"{prefix}.{split}.gz"):
        path = os.path.join(os.fspath(directory), name)
        if os.path.isfile(path):
            return path
    return None


def _three_file_splits(directory):
    """The `<split>` names of `s1.<split>[.gz]` files in `directory`."""
    splits = set()
    for name in os.listdir(directory):
        if name.startswith("s1.") and len(name) > 3:
            splits.add(name[3:].removesuffix(".gz"))
    return sorted(splits)


def load_snli_split(directory, split):
    """Reads `s1.<split>`, `s2.<split>`, `labels.<split>` from a directory.

    Each file may be gzip'd (`s1.dev.gz`). See `load_three_files`.

    Args:
        directory: str or path-like.
        split: str, e.g. `"dev"`, `"test"`, `"train"`.

    Returns:
        An `EntailmentExamples`.

    Raises:
        ValueError: naming the missing file and the splits present.

    Example:

    >>> dev = load_snli_split(  # doctest: +SKIP
    ...     "/work/shared/data/snli/esnli_infersent_format", "dev"
    ... )
    >>> dev.label_counts()  # doctest: +SKIP
    {'entailment': 3329, 'neutral': 3235, 'contradiction': 3278}
    """
    if not isinstance(split, str) or not split:
        raise ValueError(
            f"`split` must be a non-empty string. Received: split={split!r}"
        )
    paths = []
    for prefix in ("s1", "s2", "labels"):
        path = _split_file(directory, prefix, split)
        if path is None:
            raise ValueError(
                f"No {prefix}.{split} or {prefix}.{split}.gz in "
                f"{os.fspath(directory)} (splits found: "
                f"{_three_file_splits(directory)}). Received: "
                f"split={split!r}"
            )
        paths.append(path)
    return load_three_files(*paths)


def _header_columns(path, names):
    """Index of each of `names` in the tab-separated header (the first
    non-blank line)."""
    line_number, header = next(iter_lines(path), (1, ""))
    fields = [field.strip() for field in header.split("\t")]
    columns = []
    for name in names:
        if fields.count(name) != 1:
            problem = "missing column" if name not in fields else "two columns"
            raise line_error(
                path,
                line_number,
                f"{problem} {name!r} in the header (columns: {fields})",
            )
        columns.append(fields.index(name))
    return columns


def _read_rows(path, columns, names, header):
    """Yields `(line_number, fields)` of the chosen tab-separated columns.

    Skips blank lines and, with `header`, the first non-blank line.
    Raises `path:line:` errors for too few columns or an empty field (named
    by `names`, one per column).
    """
    needed = max(columns) + 1
    lines = iter_lines(path)
    if header:
        next(lines, None)
    for line_number, text in lines:
        fields = text.split("\t")
        if len(fields) < needed:
            raise line_error(
                path,
                line_number,
                f"expected at least {needed} tab-separated columns, found "
                f"{len(fields)}: {text[:80]!r}",
            )
        row = [fields[c].strip() for c in columns]
        for column, name, value in zip(columns, names, row):
            if not value:
                raise line_error(
                    path, line_number, f"{name} (column {column}) is empty"
                )
        yield line_number, row


def load_sick(path, split=None):
    """Reads SICK's `SICK.txt` (tab-separated, with a header row).

    Columns are found by their header names (`sentence_A`, `sentence_B`,
    `entailment_label` and, for `split`, `SemEval_set`), so extra or
    reordered columns work. CRLF line ends are fine.

    Args:
        path: str or path-like (`.gz` allowed).
        split: None, `"train"`, `"trial"` or `"test"` (any case): keep only
            rows whose `SemEval_set` is that split. Defaults to `None` (all
            rows).

    Returns:
        An `EntailmentExamples`.

    Raises:
        ValueError: `path:1: ...` naming a missing column;
            `path:line: ...` for too few fields, an empty field or an
            unknown label.

    Example:

    >>> train = load_sick(  # doctest: +SKIP
    ...     "/work/shared/data/sick/SICK.txt.gz", split="train"
    ... )
    >>> len(train)  # doctest: +SKIP
    4439
    """
    if split is not None and (
        not isinstance(split, str) or split.lower() not in SICK_SPLITS
    ):
        raise ValueError(
            f"`split` must be None or one of {SICK_SPLITS}. "
            f"Received: split={split!r}"
        )
    names = SICK_COLUMNS + ((SICK_SPLIT_COLUMN,) if split else ())
    columns = _header_columns(path, names)
    builder = _Builder(None)
    rows = _read_rows(path, columns, names, header=True)
    for line_number, row in rows:
        if split and row[3].lower() != split.lower():
            continue
        builder.add(row[0], row[1], row[2], path, line_number)
    return builder.build()


def load_tsv(
    path, premise_column=0, hypothesis_column=1, label_column=2, header=False
):
    """Reads premise, hypothesis and label columns of a tab-separated file.

    Blank lines are skipped, fields stripped, extra columns ignored, labels
    `"-"` dropped and counted. SNLI's own `snli_1.0_dev.txt`, for example,
    is `load_tsv(path, 5, 6, 0, header=True)`.

    Args:
        path: str or path-like (`.gz` allowed).
        premise_column: int, 0-based. Defaults to `0`.
        hypothesis_column: int, 0-based. Defaults to `1`.
        label_column: int, 0-based. Defaults to `2`.
        header: bool, skip the first non-blank line. Defaults to `False`.

    Returns:
        An `EntailmentExamples`.

    Raises:
        ValueError: `path:line: ...` for too few columns, an empty field or
            an unknown label.
    """
    columns = {
        "premise_column": premise_column,
        "hypothesis_column": hypothesis_column,
        "label_column": label_column,
    }
    for name, column in columns.items():
        if not isinstance(column, int) or column < 0:
            raise ValueError(
                f"`{name}` must be a non-negative integer. "
                f"Received: {name}={column!r}"
            )
    if len(set(columns.values())) != 3:
        raise ValueError(
            "`premise_column`, `hypothesis_column` and `label_column` must "
            f"differ. Received: {columns}"
        )
    builder = _Builder(None)
    rows = _read_rows(path, list(columns.values()), _THREE, header=header)
    for line_number, row in rows:
        builder.add(*row, path, line_number)
    return builder.build()


def load_examples(path, format="auto", split=None):
    """Loads entailment examples in any supported format.

    With `format="auto"`:

    - a directory holding `s1.<split>[.gz]` files: `"three-files"`
      (`split` required, e.g. `"dev"`);
    - a file named `*.jsonl` or `*.jsonl.gz`: `"snli-jsonl"`;
    - a file whose tab-separated header has `sentence_A` and
      `entailment_label`: `"sick"` (`split` optional);
    - another `*.tsv` or `*.txt` file (`.gz` allowed): `"tsv"`, read as
      `premise<TAB>hypothesis<TAB>label`, after a header row if the first
      line's third field is `label` or `gold_label`.

    Args:
        path: str or path-like.
        format: one of `FORMATS`. Defaults to `"auto"`.
        split: str or None: the three-file split, or the SICK split.
            Defaults to `None`.

    Returns:
        An `EntailmentExamples`.

    Raises:
        ValueError: naming the formats when `format` is unknown or cannot
            be detected, or when `split` does not apply; the loaders'
            `path:line:` errors.
        FileNotFoundError: when `path` does not exist.
    """
    if format not in FORMATS:
        raise ValueError(
            f"`format` must be one of {FORMATS}. Received: format={format!r}"
        )
    path = os.fspath(path)
    if format == "auto":
        format = detect_format(path)
    if format == "three-files":
        if not os.path.isdir(path):
            raise ValueError(
                "The three-files format reads a directory of "
                "s1/s2/labels.<split> files, but this is not a directory. "
                f"Received: path={path!r}"
            )
        if split is None:
            raise ValueError(
                "The three-files format needs `split` (splits found: "
                f"{_three_file_splits(path)}). Received: split=None"
            )
        return load_snli_split(path, split)
    if format == "sick":
        return load_sick(path, split)
    if split is not None:
        raise ValueError(
            f"`split` applies to the three-files and sick formats, not "
            f"{format!r}. Received: split={split!r}"
        )
    if format == "snli-jsonl":
        return load_snli_jsonl(path)
    return load_tsv(path, header=_label_header(path))


def _label_header(path):
    """Whether the third field of the first line is a column name."""
    _, first = next(iter_lines(path), (None, ""))
    fields = first.split("\t")
    return len(fields) > 2 and fields[2].strip().lower() in TSV_LABEL_NAMES


def detect_format(path):
    """The format of `path` for `load_examples(format="auto")`."""
    formats = ", ".join(repr(f) for f in FORMATS[1:])
    if os.path.isdir(path):
        if _three_file_splits(path):
            return "three-files"
        raise ValueError(
            f"Cannot detect the format of directory {path}: no s1.<split> "
            f"files. Pass `format=` one of {formats}."
        )
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file or directory: {path!r}")
    name = path.removesuffix(".gz")
    if name.endswith(".jsonl"):
        return "snli-jsonl"
    first = next(iter_lines(path), (None, ""))[1]
    fields = [field.strip() for field in first.split("\t")]
    if "sentence_A" in fields and "entailment_label" in fields:
        return "sick"
    if name.endswith((".tsv", ".txt")):
        return "tsv"
    raise ValueError(
        f"Cannot detect the format of {path} (expected a directory of "
        "s1/s2/labels files, *.jsonl, a SICK file, or *.tsv / *.txt). "
        f"Pass `format=` one of {formats}."
    )


def split_examples(examples, validation_fraction=0.1, seed=0):
    """Splits examples into train and validation, grouped by premise.

    All examples with the same premise go to the same side (SNLI writes
    three hypotheses per premise), so no premise leaks from training into
    validation. Deterministic for a seed. Validation gets about
    `round(len(examples) * validation_fraction)` examples (never more; a few
    fewer when the group sizes do not add up to it): premise groups
    are taken in a seeded random order while each label stays within its
    share (`ceil(count * validation_fraction)`), so the validation labels
    follow the overall proportions, then topped up with any groups that
    fit. Within each side the original order is kept.

    Args:
        examples: an `EntailmentExamples`.
        validation_fraction: float in [0, 1). Defaults to `0.1`.
        seed: int. Defaults to `0`.

    Returns:
        A tuple `(train, validation)` of `EntailmentExamples`.
    """
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(
            "`validation_fraction` must be in [0, 1). "
            f"Received: validation_fraction={validation_fraction}"
        )
    labels = np.asarray(examples.labels, "int64")
    groups = {}  # premise -> example indices, first-seen order
    for index, premise in enumerate(examples.premises):
        groups.setdefault(premise, []).append(index)
    groups = list(groups.values())
    order = np.random.default_rng(seed).permutation(len(groups))
    target = int(round(len(labels) * validation_fraction))
    quota = np.ceil(
        np.bincount(labels, minlength=len(LABELS)) * validation_fraction
    )
    taken = np.zeros(len(LABELS))
    chosen = np.zeros(len(groups), bool)
    # First pass: groups that keep every label within its quota; second:
    # any group, to come closer to the target. Neither overshoots it.
    for strict in (True, False):
        for g in order:
            counts = np.bincount(labels[groups[g]], minlength=len(LABELS))
            if chosen[g] or taken.sum() + counts.sum() > target:
                continue
            if strict and np.any(taken + counts > quota):
                continue
            chosen[g] = True
            taken += counts
    in_validation = np.zeros(len(labels), bool)
    for g in np.flatnonzero(chosen):
        in_validation[groups[g]] = True
    return (
        examples.select(np.flatnonzero(~in_validation)),
        examples.select(np.flatnonzero(in_validation)),
    )


# The synthetic world: one subject (a noun or its hypernym) with adjectives,
# doing one thing, in at most one place. Words of one group exclude each
# other: the nouns of a kind, the hypernyms (kinds), the two adjectives of a
# pair, the two verbs of a pair, the places.
HYPERNYMS = {
    **dict.fromkeys(
        (
            "dog",
            "cat",
            "horse",
            "cow",
            "sheep",
            "goat",
            "pig",
            "rabbit",
            "fox",
            "bear",
        ),
        "animal",
    ),
    **dict.fromkeys(("man", "woman", "boy", "girl"), "person"),
    **dict.fromkeys(("duck", "owl", "crow", "parrot", "hen", "swan"), "bird"),
}
KINDS = {
    kind: [noun for noun, k in HYPERNYMS.items() if k == kind]
    for kind in dict.fromkeys(HYPERNYMS.values())
}
ADJECTIVE_PAIRS = (
    ("big", "small"),
    ("old", "young"),
    ("happy", "sad"),
    ("clean", "dirty"),
    ("wet", "dry"),
)
VERB_PAIRS = (
    ("sleeps", "runs"),
    ("sits", "stands"),
    ("laughs", "cries"),
    ("smiles", "frowns"),
    ("whispers", "shouts"),
    ("arrives", "leaves"),
)
ANTONYMS = {
    **{a: b for a, b in ADJECTIVE_PAIRS + VERB_PAIRS},
    **{b: a for a, b in ADJECTIVE_PAIRS + VERB_PAIRS},
}
PLACES = {  # place -> its preposition
    "park": "in",
    "garden": "in",
    "forest": "in",
    "field": "in",
    "kitchen": "in",
    "house": "in",
    "beach": "on",
    "street": "on",
    "river": "near",
    "school": "at",
}


@dataclasses.dataclass(frozen=True)
class SyntheticEntailment:
    """Synthetic entailment examples with the word pairs that decide them.

    Attributes:
        examples: an `EntailmentExamples` of lower-case sentences, words
            separated by one space.
        cues: list (one per example) of lists of `(i, j)` int pairs: word
            `i` of the premise and word `j` of the hypothesis (0-based,
            whitespace words) whose relation decides the label.
            Contradiction: the one clashing pair (`dog`/`cat`,
            `animal`/`bird`, `sleeps`/`runs`, `big`/`small`,
            `park`/`beach`). Neutral: the one hypothesis word the premise
            does not support: `i = -1` when nothing in the premise aligns
            to it (an added adjective, or the place noun of an added place),
            else `i` is the hypernym it makes specific (`animal` -> `dog`).
            Entailment: every content word of the hypothesis (noun,
            adjectives, verb, place noun) with the premise word that
            supports it: the same word, or for a noun its hyponym
            (`dog` -> `animal`).
    """

    examples: EntailmentExamples
    cues: list


def make_synthetic_entailment(num_examples, seed=0):
    """Generates premise / hypothesis pairs whose labels follow from words.

    Each pair describes one scene `A`: a subject with adjectives doing
    something somewhere, e.g. `"the big old dog sleeps in the park"`. Both
    sentences leave details of `A` out: dropping an adjective or the place,
    or saying the hypernym instead of the noun (`dog` -> `animal`). The
    premise leaves out one detail `x`; the hypothesis leaves out one or two:

    - entailment: the hypothesis leaves out `x` too (and maybe another
      detail), so it says nothing the premise does not;
    - neutral: the hypothesis keeps `x`, a detail the premise does not
      mention: an added adjective or place, or a specific noun where the
      premise has its hypernym (`animal` -> `dog`);
    - contradiction: one word of the hypothesis is swapped for an
      incompatible one: a noun for another of its kind (`dog` -> `cat`),
      a hypernym or a noun for one of another kind (`animal` -> `bird`),
      a verb or adjective for its antonym (`sleeps` -> `runs`,
      `big` -> `small`), the place for another (`park` -> `beach`).

    So the label is decided by how aligned words relate, and never by one
    sentence alone: each sentence, premise or hypothesis, has the same
    distribution in all three classes (the same nouns, verbs, places, and
    as many details), so a linear classifier on the bags of words of the
    two sentences scores about chance (0.35 on new pairs, chance 1/3).
    The place phrase comes first or last independently in each sentence,
    so comparing words position by position does not work either.
    Sentences have 4 to 9 lower-case words from a vocabulary of 60
    (`HYPERNYMS` and their kinds, `ADJECTIVE_PAIRS`, `VERB_PAIRS`,
    `PLACES` and their prepositions, `"the"`).
    Labels are balanced: they cycle through seeded shuffles of the three.

    Args:
        num_examples: int, how many pairs.
        seed: int, seeds the NumPy generator; the same seed gives the same
            set. Defaults to `0`.

    Returns:
        A `SyntheticEntailment`.

    Example:

    >>> synthetic = make_synthetic_entailment(3, seed=0)
    >>> synthetic.examples.premises[0]
    'the young dry animal leaves on the beach'
    >>> synthetic.examples.hypotheses[0]
    'the young dry dog leaves'
    >>> LABELS[synthetic.examples.labels[0]]
    'neutral'
    >>> synthetic.cues[0]  # "dog" (word 3) specialises "animal" (word 3)
    [(3, 3)]
    """
    if not isinstance(num_examples, int) or num_examples < 0:
        raise ValueError(
            "`num_examples` must be a non-negative integer. "
            f"Received: num_examples={num_examples!r}"
        )
    rng = np.random.default_rng(seed)
    premises, hypotheses, labels, cues = [], [], [], []
    order = []
    while len(labels) < num_examples:
        if not order:  # a new shuffle of the three labels
            order = [int(label) for label in rng.permutation(len(LABELS))]
        label = order.pop()
        labels.append(label)
        premise, hypothesis, pairs = _synthetic_pair(rng, label)
        premise_words, premise_at = _render(premise, rng)
        hypothesis_words, hypothesis_at = _render(hypothesis, rng)
        premises.append(" ".join(premise_words))
        hypotheses.append(" ".join(hypothesis_words))
        cues.append(
            [
                (-1 if p is None else premise_at[p], hypothesis_at[h])
                for p, h in pairs
            ]
        )
    examples = EntailmentExamples(premises, hypotheses, labels)
    return SyntheticEntailment(examples=examples, cues=cues)


# A scene is a dict item -> word. Items: "noun", "verb", the index of each
# adjective pair present, and "place" if present.
_ORDER = (*range(len(ADJECTIVE_PAIRS)), "noun", "verb", "place")


def _random_scene(rng):
    """A full scene: a specific noun and at least three details (2 or 3
    adjectives, a place), so that leaving two out still leaves one."""
    kind = list(KINDS)[rng.integers(len(KINDS))]
    scene = {"noun": KINDS[kind][rng.integers(len(KINDS[kind]))]}
    num_adjectives = 2 + rng.integers(2)
    for pair in rng.permutation(len(ADJECTIVE_PAIRS))[:num_adjectives]:
        scene[int(pair)] = ADJECTIVE_PAIRS[pair][rng.integers(2)]
    scene["verb"] = VERB_PAIRS[rng.integers(len(VERB_PAIRS))][rng.integers(2)]
    if num_adjectives == 2 or rng.random() < 0.5:
        scene["place"] = list(PLACES)[rng.integers(len(PLACES))]
    return scene


def _leave_out(scene, items):
    """`scene` without the details `items` (the noun: its hypernym)."""
    scene = dict(scene)
    for item in items:
        if item == "noun":
            scene["noun"] = HYPERNYMS[scene["noun"]]
        else:
            del scene[item]
    return scene


def _pick(rng, items, k):
    """`k` distinct items of a list, in random order."""
    return [items[i] for i in rng.permutation(len(items))[:k]]


def _synthetic_pair(rng, label):
    """A premise scene, a hypothesis scene with `label`, and the cues as
    `(premise item or None, hypothesis item)` pairs.

    The premise leaves out one detail `x` of a full scene, the hypothesis
    a set `Y` of one or two. `x` is uniform over the details; `Y` is a
    uniform set of its size in every class, since `x` is: entailment takes
    `Y = {x}` or `{x, y}`, neutral a set without `x`, contradiction any
    set. So neither sentence alone tells the class.
    """
    scene = _random_scene(rng)
    details = [k for k in scene if k != "verb"]
    (x,) = _pick(rng, details, 1)
    size = 1 + rng.integers(2)
    if label == 0:
        others = [k for k in details if k != x]
        leave_out = [x] + _pick(rng, others, size - 1)
    elif label == 1:
        leave_out = _pick(rng, [k for k in details if k != x], size)
    else:
        leave_out = _pick(rng, details, size)
    premise = _leave_out(scene, [x])
    hypothesis = _leave_out(scene, leave_out)
    if label == 0:
        cues = [(k, k) for k in _ORDER if k in hypothesis]
    elif label == 1:
        cues = [(None if x != "noun" else "noun", x)]
    else:
        item = _clash(rng, premise, hypothesis)
        cues = [(item, item)]
    return premise, hypothesis, cues


def _clash(rng, premise, hypothesis):
    """Swaps a word of `hypothesis` that the premise has too (the noun or
    the verb, an adjective, the place) for an incompatible one, each word
    for a uniform choice among its rivals, so the hypothesis words keep
    their distribution; returns the item."""
    adjectives = [k for k in hypothesis if isinstance(k, int) and k in premise]
    places = ["place"] if "place" in hypothesis and "place" in premise else []
    (options,) = _pick(
        rng, [o for o in (["noun", "verb"], adjectives, places) if o], 1
    )
    (item,) = _pick(rng, options, 1)
    word = hypothesis[item]
    if item == "noun":
        if word in KINDS or premise["noun"] in KINDS:
            # A hypernym on either side: change the kind.
            kind = HYPERNYMS.get(word, word)
            (other,) = _pick(rng, [k for k in KINDS if k != kind], 1)
            if word in KINDS:
                hypothesis[item] = other
            else:
                (hypothesis[item],) = _pick(rng, KINDS[other], 1)
        else:
            kind = KINDS[HYPERNYMS[word]]
            (hypothesis[item],) = _pick(rng, [w for w in kind if w != word], 1)
    elif item == "place":
        (hypothesis[item],) = _pick(rng, [w for w in PLACES if w != word], 1)
    else:
        hypothesis[item] = ANTONYMS[word]
    return item


def _render(scene, rng):
    """The words of a scene, and the word index of each item. The place
    phrase comes first with probability 0.3."""
    words, at = ["the"], {}
    for item in _ORDER:
        if item in scene and item != "place":
            at[item] = len(words)
            words.append(scene[item])
    if "place" in scene:
        phrase = [PLACES[scene["place"]], "the", scene["place"]]
        if rng.random() < 0.3:
            at = {item: i + len(phrase) for item, i in at.items()}
            words = phrase + words
            at["place"] = 2
        else:
            at["place"] = len(words) + 2
            words += phrase
    return words, at
