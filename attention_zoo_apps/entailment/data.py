"""Sentence pairs for entailment: the loaders and their layout discovery.

- `load_snli_jsonl` reads the official SNLI / MultiNLI JSON lines;
  `load_three_files` and `load_snli_split` read the InferSent / e-SNLI layout
  (`s1.<split>`, `s2.<split>`, `labels.<split>`, one sentence a line);
  `load_sick` reads SICK's `SICK.txt`; `load_tsv` reads any tab-separated
  file. `load_examples` picks one of them for a path (the CLI's `--data`),
  `detect_format` says which. Errors name the file and line
  (`path:line: ...`); `.gz` files are decompressed.

Labels are class ids into `LABELS`. Every loader drops pairs labelled `"-"`
(SNLI's "no gold label") and counts them in `EntailmentExamples.skipped`.
The example container and `split_examples` live in
`attention_zoo_apps.entailment.examples`, the generated set in
`attention_zoo_apps.entailment.synthetic`; both are re-exported here.
"""

import os

from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.common.loaders import line_error
from attention_zoo_apps.common.loaders import parse_jsonl_line
from attention_zoo_apps.common.loaders import read_once
from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.examples import NO_LABEL
from attention_zoo_apps.entailment.examples import EntailmentExamples
from attention_zoo_apps.entailment.examples import label_id
from attention_zoo_apps.entailment.examples import split_examples
from attention_zoo_apps.entailment.synthetic import SyntheticEntailment
from attention_zoo_apps.entailment.synthetic import make_synthetic_entailment

__all__ = [
    "FORMATS",
    "LABELS",
    "NO_LABEL",
    "SICK_SPLITS",
    "EntailmentExamples",
    "SyntheticEntailment",
    "detect_format",
    "label_id",
    "load_examples",
    "load_sick",
    "load_snli_jsonl",
    "load_snli_split",
    "load_three_files",
    "load_tsv",
    "make_synthetic_entailment",
    "split_examples",
]

FORMATS = ("auto", "snli-jsonl", "three-files", "sick", "tsv")
SICK_SPLITS = ("train", "trial", "test")
# SICK's header names of the columns `load_sick` reads.
SICK_COLUMNS = ("sentence_A", "sentence_B", "entailment_label")
SICK_SPLIT_COLUMN = "SemEval_set"
# Third fields that mark the first line of a tab-separated file a header.
TSV_LABEL_NAMES = ("label", "gold_label")


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
    with read_once(path):  # a FIFO: detected and read from one stream
        return _load_examples(path, format, split)


def _load_examples(path, format, split):
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
    os.stat(path)  # the error naming it: missing, a loop of links, ...
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
