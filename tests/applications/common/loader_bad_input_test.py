"""Bad files through every data loader: a clear error naming the file (and
the line, `path:line:`), or a counted skip where that is the documented
behaviour.

The table `CASES` holds what the loaders' own tests do not: missing files
and folders, Latin-1 and UTF-16 files, gzip files that are not gzip or are
cut short, encodings whose newline is not one byte, header columns named
twice, duplicate Flickr8k keys. Covered there already: too few or missing
columns and missing JSON keys (`tests/applications/translation/data_test.py`,
`entailment/entailment_data_test.py`, `ehr/ehr_data_test.py`), Latin-1 TSV
and JSON lines, a patient twice in `labels.csv`, a duplicate COCO image id,
`../`, absolute and symlinked image names in COCO and Flickr8k files
(`captioning/captioning_data_test.py`), and the counted skips (absent
images, unlabelled events, SNLI's `-` labels).
"""

import gzip
import json
import re

import pytest

from attention_zoo_apps.captioning import data as captioning
from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.ehr import data as ehr
from attention_zoo_apps.entailment import data as entailment
from attention_zoo_apps.translation import data as translation

LATIN = "caña"  # "ñ" is one byte in Latin-1, not valid UTF-8 there
EVENTS = "patient_id,time,code,value\na,1,lab:lactate,2.0\n"
LABELS = "patient_id,label,prediction_time\na,1,24\n"
COCO = {
    "images": [{"id": 1, "file_name": "a.jpg"}],
    "annotations": [{"image_id": 1, "caption": "A cat."}],
}
SICK = (
    "pair_ID\tsentence_A\tsentence_B\tentailment_label\n"
    "1\tA kid plays\tA boy plays\tNEUTRAL\n"
)


def _write(path, data):
    """Writes str (as UTF-8) or bytes to `path`; returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _at(path, line):
    """A regex for the start of an error about `path:line`."""
    return "^" + re.escape(f"{path}:{line}: ")


def _ehr_folder(tmp_path, events=EVENTS, labels=LABELS):
    folder = tmp_path / "records"
    if events is not None:
        _write(folder / "events.csv", events)
    if labels is not None:
        _write(folder / "labels.csv", labels)
    return folder


def _flickr8k(tmp_path, tokens):
    (tmp_path / "images").mkdir(exist_ok=True)
    return _write(tmp_path / "tokens.txt", tokens), tmp_path / "images"


def _coco(tmp_path, raw):
    (tmp_path / "images").mkdir(exist_ok=True)
    return _write(tmp_path / "captions.json", raw), tmp_path / "images"


# Each case: `setup(tmp_path) -> (load, error type, regex)`; `load()` must
# raise the error, its message matching the regex.


def _missing_tsv(tmp_path):
    path = tmp_path / "absent.tsv"
    return (
        lambda: translation.load_tsv_pairs(path),
        FileNotFoundError,
        re.escape(str(path)),
    )


def _missing_jsonl(tmp_path):
    path = tmp_path / "absent.jsonl"
    return (
        lambda: translation.load_jsonl_pairs(path),
        FileNotFoundError,
        re.escape(str(path)),
    )


def _utf16_tsv(tmp_path):
    path = _write(tmp_path / "pairs.tsv", "a\tb\nc\td\n".encode("utf-16"))
    return (
        lambda: translation.load_tsv_pairs(path),
        ValueError,
        _at(path, 1) + ".*UTF-16 byte-order mark",
    )


def _utf16_read_as_latin1(tmp_path):
    path = _write(tmp_path / "pairs.tsv", "a\tb\n".encode("utf-16"))
    return (
        lambda: translation.load_tsv_pairs(path, encoding="latin-1"),
        ValueError,
        _at(path, 1) + ".*UTF-16 byte-order mark",
    )


def _utf16_encoding_argument(tmp_path):
    path = _write(tmp_path / "pairs.tsv", "a\tb\n".encode("utf-16"))
    return (
        lambda: translation.load_tsv_pairs(path, encoding="utf-16"),
        ValueError,
        re.escape("encoding='utf-16'"),
    )


def _latin1_jsonl(tmp_path):
    good = json.dumps({"source": "a", "target": "b"})
    bad = json.dumps({"source": LATIN, "target": "b"}, ensure_ascii=False)
    path = _write(
        tmp_path / "pairs.jsonl", f"{good}\n{bad}\n".encode("latin-1")
    )
    return (
        lambda: translation.load_jsonl_pairs(path),
        ValueError,
        _at(path, 2) + "cannot decode as utf-8",
    )


def _not_gzip(tmp_path):
    path = _write(tmp_path / "pairs.tsv.gz", "a\tb\n")
    return (
        lambda: translation.load_tsv_pairs(path),
        ValueError,
        _at(path, 1) + "cannot read the gzip file",
    )


def _truncated_gzip(tmp_path):
    lines = "".join(f"source {i}\ttarget {i}\n" for i in range(2000))
    raw = gzip.compress(lines.encode())
    path = _write(tmp_path / "pairs.tsv.gz", raw[: len(raw) // 2])
    return (
        lambda: translation.load_tsv_pairs(path),
        ValueError,
        "^" + re.escape(f"{path}:") + r"\d+: cannot read the gzip file",
    )


def _missing_sick(tmp_path):
    path = tmp_path / "SICK.txt"
    return (
        lambda: entailment.load_sick(path),
        FileNotFoundError,
        re.escape(str(path)),
    )


def _utf16_sick(tmp_path):
    path = _write(tmp_path / "SICK.txt", SICK.encode("utf-16-le"))
    path.write_bytes(b"\xff\xfe" + path.read_bytes())
    return (
        lambda: entailment.load_sick(path),
        ValueError,
        _at(path, 1) + ".*UTF-16 byte-order mark",
    )


def _sick_column_twice(tmp_path):
    header, row = SICK.splitlines()
    path = _write(
        tmp_path / "SICK.txt", f"{header}\tsentence_A\n{row}\tagain\n"
    )
    return (
        lambda: entailment.load_sick(path),
        ValueError,
        _at(path, 1) + "two columns 'sentence_A'",
    )


def _latin1_three_files(tmp_path):
    paths = [
        _write(tmp_path / "s1.dev", "a man\na dog\n"),
        _write(tmp_path / "s2.dev", f"a person\n{LATIN}\n".encode("latin-1")),
        _write(tmp_path / "labels.dev", "neutral\nneutral\n"),
    ]
    return (
        lambda: entailment.load_three_files(*paths),
        ValueError,
        _at(paths[1], 2) + "cannot decode",
    )


def _missing_three_file(tmp_path):
    s1 = _write(tmp_path / "s1.dev", "a man\n")
    s2 = tmp_path / "s2.dev"
    labels = _write(tmp_path / "labels.dev", "neutral\n")
    return (
        lambda: entailment.load_three_files(s1, s2, labels),
        FileNotFoundError,
        re.escape(str(s2)),
    )


def _missing_coco(tmp_path):
    (tmp_path / "images").mkdir()
    path = tmp_path / "captions.json"
    return (
        lambda: captioning.load_coco_captions(path, tmp_path / "images"),
        FileNotFoundError,
        re.escape(str(path)),
    )


def _missing_coco_images(tmp_path):
    path = _write(tmp_path / "captions.json", json.dumps(COCO))
    images = tmp_path / "val2017"
    return (
        lambda: captioning.load_coco_captions(path, images),
        FileNotFoundError,
        re.escape(f"image folder {images}"),
    )


def _latin1_coco(tmp_path):
    document = dict(COCO, annotations=[{"image_id": 1, "caption": LATIN}])
    text = json.dumps(document, indent=1, ensure_ascii=False)
    line = text.splitlines().index(
        next(x for x in text.splitlines() if LATIN in x)
    )
    path, images = _coco(tmp_path, text.encode("latin-1"))
    return (
        lambda: captioning.load_coco_captions(path, images),
        ValueError,
        _at(path, line + 1) + "cannot decode as UTF-8",
    )


def _utf16_coco(tmp_path):
    path, images = _coco(tmp_path, json.dumps(COCO).encode("utf-16"))
    return (
        lambda: captioning.load_coco_captions(path, images),
        ValueError,
        _at(path, 1) + "cannot decode as UTF-8",
    )


def _missing_flickr8k(tmp_path):
    (tmp_path / "images").mkdir()
    path = tmp_path / "Flickr8k.token.txt"
    return (
        lambda: captioning.load_flickr8k(path, tmp_path / "images"),
        FileNotFoundError,
        re.escape(str(path)),
    )


def _missing_flickr8k_images(tmp_path):
    path = _write(tmp_path / "tokens.txt", "a.jpg#0\tA cat .\n")
    images = tmp_path / "Flicker8k_Dataset"
    return (
        lambda: captioning.load_flickr8k(path, images),
        FileNotFoundError,
        re.escape(f"image folder {images}"),
    )


def _duplicate_flickr8k_key(tmp_path):
    path, images = _flickr8k(
        tmp_path,
        "a.jpg#0\tA cat .\na.jpg#1\tA cat sits .\n\na.jpg#0\tAgain .\n",
    )
    return (
        lambda: captioning.load_flickr8k(path, images),
        ValueError,
        _at(path, 4) + re.escape("duplicate key 'a.jpg#0' (first on line 1)"),
    )


def _latin1_flickr8k(tmp_path):
    path, images = _flickr8k(
        tmp_path, f"a.jpg#0\tA cat .\nb.jpg#0\t{LATIN} .\n".encode("latin-1")
    )
    return (
        lambda: captioning.load_flickr8k(path, images),
        ValueError,
        _at(path, 2) + "cannot decode as utf-8",
    )


def _utf16_flickr8k(tmp_path):
    path, images = _flickr8k(tmp_path, "a.jpg#0\tA cat .\n".encode("utf-16"))
    return (
        lambda: captioning.load_flickr8k(path, images),
        ValueError,
        _at(path, 1) + ".*UTF-16 byte-order mark",
    )


def _missing_events(tmp_path):
    folder = _ehr_folder(tmp_path, events=None)
    return (
        lambda: ehr.load_long_format(folder),
        FileNotFoundError,
        re.escape(str(folder / "events.csv")),
    )


def _missing_labels(tmp_path):
    folder = _ehr_folder(tmp_path, labels=None)
    return (
        lambda: ehr.load_long_format(folder),
        FileNotFoundError,
        re.escape(str(folder / "labels.csv")),
    )


def _latin1_events(tmp_path):
    events = EVENTS + f"a,2,lab:{LATIN},1.0\n"
    folder = _ehr_folder(tmp_path, events=events.encode("latin-1"))
    return (
        lambda: ehr.load_long_format(folder),
        ValueError,
        _at(folder / "events.csv", 3) + "cannot decode as utf-8",
    )


def _utf16_labels(tmp_path):
    folder = _ehr_folder(tmp_path, labels=LABELS.encode("utf-16"))
    return (
        lambda: ehr.load_long_format(folder),
        ValueError,
        _at(folder / "labels.csv", 1) + ".*UTF-16 byte-order mark",
    )


def _events_column_twice(tmp_path):
    events = "patient_id,time,code,value,time\na,1,lab:lactate,2.0,3\n"
    folder = _ehr_folder(tmp_path, events=events)
    return (
        lambda: ehr.load_long_format(folder),
        ValueError,
        _at(folder / "events.csv", 1)
        + re.escape("the header names the column(s) ['time'] more"),
    )


def _corrupt_gzip_labels(tmp_path):
    folder = _ehr_folder(tmp_path, labels=None)
    path = _write(folder / "labels.csv.gz", LABELS)  # not compressed
    return (
        lambda: ehr.load_long_format(folder),
        ValueError,
        _at(path, 1) + "cannot read the gzip file",
    )


CASES = {
    "translation tsv: missing file": _missing_tsv,
    "translation jsonl: missing file": _missing_jsonl,
    "translation tsv: UTF-16": _utf16_tsv,
    "translation tsv: UTF-16 read as Latin-1": _utf16_read_as_latin1,
    "translation tsv: encoding='utf-16'": _utf16_encoding_argument,
    "translation jsonl: Latin-1": _latin1_jsonl,
    "translation tsv.gz: not gzip": _not_gzip,
    "translation tsv.gz: cut short": _truncated_gzip,
    "entailment sick: missing file": _missing_sick,
    "entailment sick: UTF-16": _utf16_sick,
    "entailment sick: a column twice": _sick_column_twice,
    "entailment three files: Latin-1": _latin1_three_files,
    "entailment three files: one missing": _missing_three_file,
    "captioning coco: missing file": _missing_coco,
    "captioning coco: missing image folder": _missing_coco_images,
    "captioning coco: Latin-1": _latin1_coco,
    "captioning coco: UTF-16": _utf16_coco,
    "captioning flickr8k: missing file": _missing_flickr8k,
    "captioning flickr8k: missing image folder": _missing_flickr8k_images,
    "captioning flickr8k: duplicate image#n": _duplicate_flickr8k_key,
    "captioning flickr8k: Latin-1": _latin1_flickr8k,
    "captioning flickr8k: UTF-16": _utf16_flickr8k,
    "ehr: missing events.csv": _missing_events,
    "ehr: missing labels.csv": _missing_labels,
    "ehr: Latin-1 events": _latin1_events,
    "ehr: UTF-16 labels": _utf16_labels,
    "ehr: a header column twice": _events_column_twice,
    "ehr: labels.csv.gz not gzip": _corrupt_gzip_labels,
}


@pytest.mark.parametrize("setup", list(CASES.values()), ids=list(CASES))
def test_bad_file_gives_an_error_naming_file_and_line(setup, tmp_path):
    load, error, pattern = setup(tmp_path)
    with pytest.raises(error, match=pattern):
        load()


def test_utf8_byte_order_marks_are_read(tmp_path):
    bom = "\ufeff"
    tsv = _write(tmp_path / "pairs.tsv", f"{bom}a\tb\n")
    assert translation.load_tsv_pairs(tsv) == [("a", "b")]
    path, images = _coco(tmp_path, bom + json.dumps(COCO))
    _write(images / "a.jpg", b"")
    assert captioning.load_coco_captions(path, images).captions == [["A cat."]]


def test_a_missing_notes_file_is_counted_not_an_error(tmp_path):
    records = ehr.load_long_format(_ehr_folder(tmp_path))
    assert records.notes == [""]
    assert records.counts["patients_without_notes"] == 1


def test_unknown_encoding_is_named(tmp_path):
    path = _write(tmp_path / "x.txt", "a\n")
    with pytest.raises(ValueError, match=re.escape("encoding='klingon'")):
        list(iter_lines(path, encoding="klingon"))
