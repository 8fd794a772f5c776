"""Entailment data: the loaders, format detection, the real data sets."""

import gzip
import json
import re

import pytest

from attention_zoo_apps.entailment import data


def _write(path, text, compress=False):
    raw = text.encode("utf-8")
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def _at(path, line):
    """A regex for the start of an error about `path:line`."""
    return "^" + re.escape(f"{path}:{line}: ")


def _jsonl(records):
    return "".join(json.dumps(record) + "\n" for record in records)


def _record(premise, hypothesis, label, **extra):
    return {
        "sentence1": premise,
        "sentence2": hypothesis,
        "gold_label": label,
        **extra,
    }


# --- SNLI / MultiNLI jsonl -------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_load_snli_jsonl(tmp_path, compress):
    records = [
        _record("A man sleeps.", "A person sleeps.", "entailment", pairID="1"),
        _record("A man sleeps.", "A man runs.", "-"),
        _record(" A dog. ", "An animal.", "Neutral"),
        _record("A cat.", "A dog.", "CONTRADICTION"),
    ]
    name = "snli.jsonl.gz" if compress else "snli.jsonl"
    path = _write(tmp_path / name, _jsonl(records) + "\n", compress)
    examples = data.load_snli_jsonl(path)
    assert examples.premises == ["A man sleeps.", "A dog.", "A cat."]
    assert examples.hypotheses == ["A person sleeps.", "An animal.", "A dog."]
    assert examples.labels == [0, 1, 2]
    assert examples.skipped == 1
    first_two = data.load_snli_jsonl(path, max_examples=2)
    assert first_two.premises == examples.premises[:2]
    assert first_two.skipped == 1


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ('{"sentence1": "a", ', "invalid JSON"),
        ('["a", "b", "neutral"]', "JSON object"),
        ('{"sentence1": "a", "gold_label": "neutral"}', "key 'sentence2'"),
        (json.dumps(_record("a", "b", "entails")), "unknown label 'entails'"),
        (json.dumps(_record("a", "", "neutral")), "non-empty string"),
        (json.dumps(_record("a", "b", None)), "non-empty string"),
    ],
)
def test_load_snli_jsonl_names_file_and_line(tmp_path, bad_line, message):
    good = json.dumps(_record("a", "b", "neutral"))
    path = _write(tmp_path / "bad.jsonl", f"{good}\n\n{bad_line}\n{good}\n")
    with pytest.raises(ValueError, match=message) as info:
        data.load_snli_jsonl(path)
    assert str(info.value).startswith(f"{path}:3: ")


def test_loaders_report_undecodable_lines(tmp_path):
    good = json.dumps(_record("a", "b", "neutral")).encode()
    path = tmp_path / "latin.jsonl"
    path.write_bytes(good + b"\n" + good.replace(b"a", b"\xe1") + b"\n")
    with pytest.raises(ValueError, match="latin.jsonl:2: cannot decode"):
        data.load_snli_jsonl(path)
    tsv = tmp_path / "latin.tsv"
    tsv.write_bytes(b"a\tb\tneutral\nca\xf1a\tb\tneutral\n")
    with pytest.raises(ValueError, match="latin.tsv:2: cannot decode"):
        data.load_tsv(tsv)


# --- three line-aligned files ----------------------------------------------


def _three(tmp_path, premises, hypotheses, labels, split="dev", gz=()):
    """Writes s1/s2/labels.<split>, gzip'd for the prefixes in `gz`."""
    paths = []
    for prefix, lines in (
        ("s1", premises),
        ("s2", hypotheses),
        ("labels", labels),
    ):
        name = f"{prefix}.{split}" + (".gz" if prefix in gz else "")
        text = "".join(line + "\n" for line in lines)
        paths.append(_write(tmp_path / name, text, prefix in gz))
    return paths


@pytest.mark.parametrize("gz", [(), ("s1", "s2", "labels"), ("s2",)])
def test_load_three_files(tmp_path, gz):
    paths = _three(
        tmp_path,
        ["Two women are embracing . ", "A dog runs . \r", "A cat . "],
        ["The sisters are hugging . ", "A dog sleeps . ", "An animal . "],
        ["neutral ", "contradiction", "-"],
        gz=gz,
    )
    examples = data.load_three_files(*paths)
    assert examples.premises == ["Two women are embracing .", "A dog runs ."]
    assert examples.hypotheses == [
        "The sisters are hugging .",
        "A dog sleeps .",
    ]
    assert examples.labels == [1, 2]
    assert examples.skipped == 1
    assert data.load_three_files(*paths, max_examples=1).labels == [1]
    split = data.load_snli_split(tmp_path, "dev")
    assert split == examples
    assert data.load_examples(tmp_path, split="dev") == examples
    assert data.load_examples(paths[0].parent, "three-files", "dev") == split


@pytest.mark.parametrize("short", [0, 1, 2])
def test_load_three_files_rejects_different_lengths(tmp_path, short):
    lines = [["p1", "p2", "p3"], ["h1", "h2", "h3"], ["neutral"] * 3]
    lines[short] = lines[short][:2]
    paths = _three(tmp_path, *lines)
    with pytest.raises(ValueError, match="same number of lines") as info:
        data.load_three_files(*paths)
    message = str(info.value)
    assert message.startswith(f"{paths[short]}:3: ")
    assert "ends after line 2" in message
    for path in paths:
        assert str(path) in message


@pytest.mark.parametrize(
    "column, message", [(0, "empty premise"), (1, "empty hypothesis")]
)
def test_load_three_files_rejects_empty_sentences(tmp_path, column, message):
    lines = [["p1", "p2", "p3"], ["h1", "h2", "h3"], ["neutral"] * 3]
    lines[column][1] = "  "
    paths = _three(tmp_path, *lines)
    with pytest.raises(ValueError, match=_at(paths[column], 2) + message):
        data.load_three_files(*paths)


def test_load_three_files_names_a_bad_label(tmp_path):
    paths = _three(tmp_path, ["a", "b"], ["c", "d"], ["neutral", "entails"])
    with pytest.raises(ValueError, match=_at(paths[2], 2) + "unknown label"):
        data.load_three_files(*paths)


def test_load_snli_split_names_missing_files(tmp_path):
    _three(tmp_path, ["a"], ["b"], ["neutral"], split="test")
    with pytest.raises(ValueError, match=r"s1\.dev.*\['test'\]"):
        data.load_snli_split(tmp_path, "dev")
    (tmp_path / "s2.test").unlink()
    with pytest.raises(ValueError, match=r"No s2\.test or s2\.test\.gz"):
        data.load_snli_split(tmp_path, "test")
    with pytest.raises(ValueError, match="split=None"):
        data.load_examples(tmp_path)


# --- SICK ------------------------------------------------------------------

SICK_HEADER = [
    "pair_ID",
    "sentence_A",
    "sentence_B",
    "entailment_label",
    "relatedness_score",
    "SemEval_set",
]
SICK_ROWS = [
    ["1", "A kid plays", "A boy plays", "NEUTRAL", "4.5", "TRAIN"],
    ["2", "A man cuts", "A man slices", "ENTAILMENT", "4.9", "TEST"],
    ["3", "A dog runs", "No dog runs", "CONTRADICTION", "3.6", "TRIAL"],
    ["4", "A cat eats", "A cat sleeps", "CONTRADICTION", "3.0", "TRAIN"],
]


def _sick(tmp_path, order=None, rows=SICK_ROWS, compress=False):
    order = order or list(range(len(SICK_HEADER)))
    lines = [
        [row[i] for i in order if i < len(row)] for row in [SICK_HEADER, *rows]
    ]
    text = "".join("\t".join(line) + "\r\n" for line in lines)
    name = "SICK.txt.gz" if compress else "SICK.txt"
    return _write(tmp_path / name, text, compress)


@pytest.mark.parametrize("compress", [False, True])
def test_load_sick_by_split(tmp_path, compress):
    path = _sick(tmp_path, compress=compress)
    everything = data.load_sick(path)
    assert everything.premises == [row[1] for row in SICK_ROWS]
    assert everything.hypotheses == [row[2] for row in SICK_ROWS]
    assert everything.labels == [1, 0, 2, 2]
    train = data.load_sick(path, "train")
    assert train.premises == ["A kid plays", "A cat eats"]
    assert train.labels == [1, 2]
    assert data.load_sick(path, "TRIAL").labels == [2]
    assert data.load_sick(path, "Test").hypotheses == ["A man slices"]
    assert data.load_examples(path) == everything
    assert data.load_examples(path, split="train") == train
    with pytest.raises(ValueError, match="split='dev'"):
        data.load_sick(path, "dev")


def test_load_sick_finds_columns_by_name(tmp_path):
    (tmp_path / "plain").mkdir()
    plain = _sick(tmp_path / "plain")
    path = _sick(tmp_path, order=[5, 3, 4, 2, 0, 1])
    assert data.load_sick(path) == data.load_sick(plain)
    assert data.load_sick(path, "train").labels == [1, 2]


@pytest.mark.parametrize("column", [1, 2, 3, 5])
def test_load_sick_names_a_missing_column(tmp_path, column):
    order = [i for i in range(len(SICK_HEADER)) if i != column]
    path = _sick(tmp_path, order=order)
    name = SICK_HEADER[column]
    with pytest.raises(
        ValueError, match=_at(path, 1) + f"missing column '{name}'"
    ):
        data.load_sick(path, split="train")
    if name == "SemEval_set":  # only needed to pick a split
        assert len(data.load_sick(path)) == len(SICK_ROWS)


@pytest.mark.parametrize(
    "row, message",
    [
        (["5", "A", "B", "MAYBE", "1.0", "TRAIN"], "unknown label 'MAYBE'"),
        (["5", "A", "", "NEUTRAL", "1.0", "TRAIN"], r"sentence_B \(column 2"),
        (["5", "A", "B"], "at least 4"),
    ],
)
def test_load_sick_names_file_and_line(tmp_path, row, message):
    path = _sick(tmp_path, rows=SICK_ROWS[:2] + [row])
    with pytest.raises(ValueError, match=_at(path, 4) + f".*{message}"):
        data.load_sick(path)


# --- TSV and format detection ----------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_load_tsv(tmp_path, compress):
    name = "pairs.tsv.gz" if compress else "pairs.tsv"
    path = _write(
        tmp_path / name,
        "A dog\tAn animal\tentailment\textra\n\nA b\tC d\t-\n"
        " x \ty\tNEUTRAL\r\n",
        compress,
    )
    examples = data.load_tsv(path)
    assert examples.premises == ["A dog", "x"]
    assert examples.hypotheses == ["An animal", "y"]
    assert examples.labels == [0, 1]
    assert examples.skipped == 1
    assert data.load_examples(path) == examples
    swapped = data.load_tsv(path, 1, 0, 2, header=True)
    assert swapped.premises == ["y"] and swapped.hypotheses == ["x"]


def test_load_tsv_reads_snli_txt_layout(tmp_path):
    # SNLI's own .txt: gold_label first, sentences in columns 5 and 6.
    header = "gold_label\tb1\tp1\tb2\tp2\tsentence1\tsentence2\tcaptionID"
    rows = ["neutral\t(\t(\t(\t(\tA man.\tA tall man.\tx", "-\t\t\t\t\ta\tb\ty"]
    path = _write(tmp_path / "snli_1.0_dev.txt", "\n".join([header, *rows]))
    examples = data.load_tsv(path, 5, 6, 0, header=True)
    assert (examples.premises, examples.labels) == (["A man."], [1])
    assert examples.skipped == 1
    # `load_examples` takes a header whose third field is a label name.
    plain = _write(tmp_path / "h.txt", "premise\thypothesis\tlabel\na\tb\t-\n")
    assert data.load_examples(plain).skipped == 1


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("only\ttwo", "expected at least 3 tab-separated columns, found 2"),
        ("a\t \tneutral", r"hypothesis \(column 1\) is empty"),
        ("a\tb\tentails", "unknown label 'entails'"),
    ],
)
def test_load_tsv_names_file_and_line(tmp_path, bad_line, message):
    path = _write(tmp_path / "bad.tsv", f"a\tb\tneutral\n{bad_line}\n")
    with pytest.raises(ValueError, match=_at(path, 2) + message):
        data.load_tsv(path)


def test_load_tsv_rejects_bad_columns(tmp_path):
    path = _write(tmp_path / "p.tsv", "a\tb\tneutral\n")
    with pytest.raises(ValueError, match="label_column=-1"):
        data.load_tsv(path, label_column=-1)
    with pytest.raises(ValueError, match="must differ"):
        data.load_tsv(path, 0, 0, 2)


def test_load_examples_explains_formats(tmp_path):
    jsonl = _write(
        tmp_path / "m.jsonl.gz", _jsonl([_record("a", "b", "neutral")]), True
    )
    assert data.load_examples(jsonl).labels == [1]
    assert data.load_examples(jsonl, "snli-jsonl").labels == [1]
    with pytest.raises(ValueError, match="'snli-jsonl'.*format='csv'"):
        data.load_examples(jsonl, "csv")
    with pytest.raises(ValueError, match="split='dev'"):
        data.load_examples(jsonl, split="dev")
    other = _write(tmp_path / "pairs.csv", "a,b,neutral\n")
    with pytest.raises(ValueError, match="pairs.csv.*'three-files'.*'tsv'"):
        data.load_examples(other)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="s1.<split>.*'sick'"):
        data.load_examples(tmp_path / "empty")
    with pytest.raises(ValueError, match="not a directory"):
        data.load_examples(jsonl, "three-files", "dev")
    with pytest.raises(FileNotFoundError, match="nothing.tsv"):
        data.load_examples(tmp_path / "nothing.tsv")


# --- real data -------------------------------------------------------------


def _snli_directory(shared_data):
    directory = shared_data / "snli" / "esnli_infersent_format"
    if not directory.is_dir():
        pytest.skip(f"{directory} not found")
    return directory


@pytest.mark.parametrize(
    "split, counts",
    [
        ("dev", (3329, 3235, 3278)),
        ("test", (3368, 3219, 3237)),
    ],
)
def test_real_snli_three_files(shared_data, split, counts):
    examples = data.load_examples(_snli_directory(shared_data), split=split)
    assert len(examples) == sum(counts)
    assert examples.label_counts() == dict(zip(data.LABELS, counts))
    assert examples.skipped == 0
    first = {
        "dev": "Two women are embracing while holding to go packages .",
        "test": "This church choir sings to the masses as they sing joyous "
        "songs from the book at a church .",
    }
    assert examples.premises[0] == first[split]
    assert all(p and h for p, h in zip(examples.premises, examples.hypotheses))


def test_real_snli_jsonl_sample_matches_the_dev_files(shared_data):
    path = (
        shared_data
        / "snli"
        / "raw_jsonl_sample"
        / "snli_1.0_dev.sample.jsonl.gz"
    )
    if not path.exists():
        pytest.skip(f"{path} not found")
    sample = data.load_examples(path)
    assert len(sample) + sample.skipped == 1289
    assert sample.skipped == 16
    dev = data.load_snli_split(_snli_directory(shared_data), "dev")

    # The jsonl sentences are untokenized ("packages.", '"HELP ME"'), the
    # dev files PTB-tokenized ("packages .", "`` HELP ME ''").
    def squeeze(examples, i):
        return tuple(
            text.replace(" ", "").replace("``", '"').replace("''", '"')
            for text in (examples.premises[i], examples.hypotheses[i])
        ) + (examples.labels[i],)

    assert sample.premises[0] == (
        "Two women are embracing while holding to go packages."
    )
    assert squeeze(sample, 0) == squeeze(dev, 0)
    # Every gold-labelled record is a dev pair (three are out of dev order).
    dev_pairs = {squeeze(dev, i) for i in range(len(dev))}
    assert all(squeeze(sample, i) in dev_pairs for i in range(len(sample)))


@pytest.mark.parametrize(
    "split, counts",
    [
        ("train", (1274, 2524, 641)),
        ("trial", (143, 281, 71)),
        ("test", (1404, 2790, 712)),
        (None, (2821, 5595, 1424)),
    ],
)
def test_real_sick_splits(shared_data, split, counts):
    path = shared_data / "sick" / "SICK.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    examples = data.load_examples(path, split=split)
    assert examples.label_counts() == dict(zip(data.LABELS, counts))
    assert len(examples) == {"train": 4439, "trial": 495, "test": 4906}.get(
        split, 9840
    )
