"""Entailment data: loaders, the grouped split, the synthetic set."""

import collections
import gzip
import json
import re

import numpy as np
import pytest

from applications.entailment import data


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


# --- labels and the examples container -------------------------------------


@pytest.mark.parametrize(
    "label, expected",
    [
        ("entailment", 0),
        ("neutral", 1),
        ("contradiction", 2),
        ("ENTAILMENT", 0),
        ("Neutral", 1),
        (" CONTRADICTION\r", 2),
    ],
)
def test_label_id_is_case_insensitive(label, expected):
    assert data.label_id(label) == expected
    assert data.LABELS[expected] == label.strip().lower()


@pytest.mark.parametrize("label", ["entails", "-", "", 1, None])
def test_label_id_rejects_other_values(label):
    with pytest.raises(ValueError, match=f"label={label!r}"):
        data.label_id(label)
    with pytest.raises(ValueError, match=r"^f\.txt:3: unknown label"):
        data.label_id(label, "f.txt", 3)


def test_examples_select_and_count():
    examples = data.EntailmentExamples(
        ["p0", "p1", "p2", "p3"], ["h0", "h1", "h2", "h3"], [2, 0, 2, 1], 5
    )
    assert len(examples) == 4
    assert examples.label_counts() == {
        "entailment": 1,
        "neutral": 1,
        "contradiction": 2,
    }
    subset = examples.select(np.array([3, 0]))
    assert subset.premises == ["p3", "p0"]
    assert subset.hypotheses == ["h3", "h0"]
    assert subset.labels == [1, 2]
    assert subset.skipped == 0
    assert subset.label_counts() == {
        "entailment": 0,
        "neutral": 1,
        "contradiction": 1,
    }
    with pytest.raises(ValueError, match="same length"):
        data.EntailmentExamples(["p"], ["h", "h"], [0])


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


# --- split -----------------------------------------------------------------


def _grouped_examples():
    """60 premises with 1 to 3 hypotheses each, labels 2:1:1."""
    premises, hypotheses, labels = [], [], []
    for p in range(60):
        for h in range(1 + p % 3):
            premises.append(f"premise {p}")
            hypotheses.append(f"hypothesis {p} {h}")
            labels.append([0, 0, 1, 2][(p + h) % 4])
    return data.EntailmentExamples(premises, hypotheses, labels)


def test_split_examples_groups_premises_and_keeps_proportions():
    examples = _grouped_examples()
    train, validation = data.split_examples(examples, 0.2, seed=3)
    assert not set(train.premises) & set(validation.premises)
    assert len(train) + len(validation) == len(examples)
    assert 22 <= len(validation) <= round(0.2 * len(examples)) == 24
    pairs = set(zip(examples.premises, examples.hypotheses, examples.labels))
    for part in (train, validation):
        assert set(zip(part.premises, part.hypotheses, part.labels)) <= pairs
        # Original order kept.
        order = [examples.hypotheses.index(h) for h in part.hypotheses]
        assert order == sorted(order)
    counts = examples.label_counts()
    for name, count in validation.label_counts().items():
        assert abs(count - 0.2 * counts[name]) <= 1.5, (name, count)
    again = data.split_examples(examples, 0.2, seed=3)
    assert again == (train, validation)
    other = data.split_examples(examples, 0.2, seed=4)[1]
    assert other.premises != validation.premises
    empty = data.split_examples(examples, 0.0)[1]
    assert len(empty) == 0
    with pytest.raises(ValueError, match="validation_fraction=1.0"):
        data.split_examples(examples, 1.0)


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


# --- synthetic -------------------------------------------------------------

# The synthetic world, written again from the docstring: noun -> kind.
KIND = {
    **dict.fromkeys(
        "dog cat horse cow sheep goat pig rabbit fox bear".split(), "animal"
    ),
    **dict.fromkeys("man woman boy girl".split(), "person"),
    **dict.fromkeys("duck owl crow parrot hen swan".split(), "bird"),
}
OPPOSITE = dict(
    pair
    for a, b in [
        ("big", "small"),
        ("old", "young"),
        ("happy", "sad"),
        ("clean", "dirty"),
        ("wet", "dry"),
        ("sleeps", "runs"),
        ("sits", "stands"),
        ("laughs", "cries"),
        ("smiles", "frowns"),
        ("whispers", "shouts"),
        ("arrives", "leaves"),
    ]
    for pair in [(a, b), (b, a)]
)
VERBS = {"sleeps", "sits", "laughs", "smiles", "whispers", "arrives"}
VERBS |= {OPPOSITE[v] for v in VERBS}
ADJECTIVES = set(OPPOSITE) - VERBS
PLACES = set(
    "park garden forest field kitchen house beach street river".split()
)
PLACES.add("school")
FUNCTION_WORDS = {"the", "in", "on", "near", "at"}


def _parse(sentence):
    """`{"noun": w, "verb": w, "place": w?, "adjectives": {w, ...}}`."""
    words = sentence.split()
    scene = {"adjectives": set()}
    for word in words:
        if word in ADJECTIVES:
            scene["adjectives"].add(word)
        elif word in KIND or word in set(KIND.values()):
            assert "noun" not in scene, sentence
            scene["noun"] = word
        elif word in VERBS:
            scene["verb"] = word
        elif word in PLACES:
            scene["place"] = word
        else:
            assert word in FUNCTION_WORDS, word
    return scene


def _implied(premise_word, hypothesis_word):
    return hypothesis_word in (premise_word, KIND.get(premise_word))


def _clashes(p, h):
    if h == OPPOSITE.get(p):
        return True
    if p in PLACES and h in PLACES:
        return p != h
    if p in KIND and h in KIND and KIND[p] == KIND[h]:
        return p != h  # two of one kind
    nouns = set(KIND) | set(KIND.values())
    return p in nouns and h in nouns and KIND.get(p, p) != KIND.get(h, h)


def _relation(premise, hypothesis):
    """The label of a pair, from its words (independent of the generator)."""
    p, h = _parse(premise), _parse(hypothesis)
    p_words = p["adjectives"] | {p["noun"], p["verb"], p.get("place")}
    h_words = h["adjectives"] | {h["noun"], h["verb"], h.get("place")}
    if any(_clashes(a, b) for a in p_words for b in h_words if a and b):
        return "contradiction"
    supported = h["adjectives"] <= p["adjectives"] and _implied(
        p["noun"], h["noun"]
    )
    supported &= h.get("place") in (None, p.get("place"))
    return "entailment" if supported else "neutral"


@pytest.fixture(scope="module")
def synthetic():
    return data.make_synthetic_entailment(3000, seed=1)


def test_synthetic_labels_follow_from_the_words(synthetic):
    examples = synthetic.examples
    assert examples.label_counts() == dict.fromkeys(data.LABELS, 1000)
    for premise, hypothesis, label in zip(
        examples.premises, examples.hypotheses, examples.labels
    ):
        assert _relation(premise, hypothesis) == data.LABELS[label], (
            premise,
            hypothesis,
        )


def test_synthetic_sentences_are_short_lower_case_words(synthetic):
    sentences = synthetic.examples.premises + synthetic.examples.hypotheses
    lengths = collections.Counter(len(s.split()) for s in sentences)
    assert min(lengths) == 4 and max(lengths) == 9
    vocabulary = {word for s in sentences for word in s.split()}
    assert 55 <= len(vocabulary) <= 100
    assert all(s == s.lower() and s == " ".join(s.split()) for s in sentences)
    # The place phrase comes first in some sentences, last in others.
    fronted = sum(s.split()[0] != "the" for s in sentences)
    placed = sum(any(w in PLACES for w in s.split()) for s in sentences)
    assert 0.2 < fronted / placed < 0.4


def test_synthetic_cues_point_at_the_deciding_words(synthetic):
    examples = synthetic.examples
    kinds = set(KIND.values())
    for premise, hypothesis, label, cues in zip(
        examples.premises, examples.hypotheses, examples.labels, synthetic.cues
    ):
        p, h = premise.split(), hypothesis.split()
        pairs = [(p[i] if i >= 0 else None, h[j]) for i, j in cues]
        label = data.LABELS[label]
        if label == "contradiction":
            ((a, b),) = pairs
            assert a and _clashes(a, b), (premise, hypothesis, cues)
        elif label == "neutral":
            ((a, b),) = pairs
            if a is None:  # an added detail: nothing in the premise aligns
                assert b in ADJECTIVES | PLACES and b not in p
            else:  # a hypernym made specific
                assert a in kinds and KIND[b] == a
        else:
            # Every content word of the hypothesis, once, with its support.
            content = [j for j, w in enumerate(h) if w not in FUNCTION_WORDS]
            assert sorted(j for _, j in cues) == content
            assert all(a == b or KIND.get(a) == b for a, b in pairs)
    # The hypernym cues exist in both directions.
    hypernym_cues = collections.Counter()
    for premise, hypothesis, label, cues in zip(
        examples.premises, examples.hypotheses, examples.labels, synthetic.cues
    ):
        for i, j in cues:
            a, b = premise.split()[i] if i >= 0 else "", hypothesis.split()[j]
            if KIND.get(a) == b or KIND.get(b) == a:
                hypernym_cues[data.LABELS[label]] += 1
    assert hypernym_cues["entailment"] > 50 and hypernym_cues["neutral"] > 50


def test_synthetic_set_is_deterministic():
    a = data.make_synthetic_entailment(40, seed=5)
    assert a == data.make_synthetic_entailment(40, seed=5)
    assert a.examples.premises != (
        data.make_synthetic_entailment(40, seed=6).examples.premises
    )
    prefix = data.make_synthetic_entailment(17, seed=5)
    assert prefix.examples == a.examples.select(range(17))
    assert prefix.cues == a.cues[:17]
    assert len(data.make_synthetic_entailment(0).examples) == 0
    with pytest.raises(ValueError, match="num_examples=-1"):
        data.make_synthetic_entailment(-1)


def test_synthetic_sentences_alone_do_not_tell_the_label(synthetic):
    examples = synthetic.examples
    for side in (examples.premises, examples.hypotheses):
        bags = collections.defaultdict(set)
        for sentence, label in zip(side, examples.labels):
            bags[tuple(sorted(sentence.split()))].add(label)
        # Many bags of words occur with several labels...
        assert sum(len(labels) > 1 for labels in bags.values()) > 50
        # ...and every noun, verb and place occurs in all three classes.
        classes = collections.defaultdict(set)
        for sentence, label in zip(side, examples.labels):
            for word in sentence.split():
                classes[word].add(label)
        assert all(len(labels) == 3 for labels in classes.values())


def _linear_classifier(x, y, l2=1.0):
    """Ridge regression onto one-hot labels (a linear classifier in one
    solve); returns the scoring function."""
    x = np.hstack([x, np.ones((len(x), 1))])
    weights = np.linalg.solve(
        x.T @ x + l2 * np.eye(x.shape[1]), x.T @ np.eye(3)[y]
    )
    return lambda z: np.hstack([z, np.ones((len(z), 1))]) @ weights


def test_synthetic_bag_of_words_per_sentence_is_at_chance():
    """A linear classifier on the word counts of the premise and of the
    hypothesis (two separate bags) learns nothing that carries over to new
    examples (it scores about 0.35, chance is 1/3), while relating the
    words gets every label right."""
    train = data.make_synthetic_entailment(3000, seed=2).examples
    test = data.make_synthetic_entailment(3000, seed=3).examples
    vocabulary = sorted(
        {w for s in train.premises + train.hypotheses for w in s.split()}
    )
    index = {word: i for i, word in enumerate(vocabulary)}

    def bags(sentences):
        x = np.zeros((len(sentences), len(vocabulary)))
        for n, sentence in enumerate(sentences):
            for word in sentence.split():
                x[n, index[word]] += 1
        return x

    def accuracy(features):
        model = _linear_classifier(features(train), np.array(train.labels))
        predictions = model(features(test)).argmax(1)
        return (predictions == np.array(test.labels)).mean()

    def separate(examples):
        return np.hstack([bags(examples.premises), bags(examples.hypotheses)])

    assert accuracy(separate) < 0.4  # chance: 1/3
    # The same pairs labelled by aligning words: always right.
    relation = [_relation(p, h) for p, h in zip(test.premises, test.hypotheses)]
    assert relation == [data.LABELS[label] for label in test.labels]
