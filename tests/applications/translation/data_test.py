"""Translation data: loaders, splits, tf.data batches."""

import gzip
import json

import numpy as np
import pytest

from attention_zoo_apps.common.wordpiece import END_ID
from attention_zoo_apps.common.wordpiece import PAD_ID
from attention_zoo_apps.common.wordpiece import START_ID
from attention_zoo_apps.translation import data


def _write(path, text, compress=False):
    raw = text.encode("utf-8")
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


@pytest.mark.parametrize("compress", [False, True])
def test_load_tsv_pairs_reads_chosen_columns(tmp_path, compress):
    name = "pairs.tsv.gz" if compress else "pairs.tsv"
    path = _write(
        tmp_path / name,
        "Go.\tVe.\tCC-BY 2.0 (France) Attribution\n"
        "\n"
        "Hi. \t Hola.\r\n"
        "Café?\t¿Café?\n",
        compress,
    )
    pairs = data.load_tsv_pairs(path)
    assert pairs == [("Go.", "Ve."), ("Hi.", "Hola."), ("Café?", "¿Café?")]
    reverse = data.load_tsv_pairs(path, source_column=1, target_column=0)
    assert reverse == [(t, s) for s, t in pairs]
    assert data.load_tsv_pairs(path, max_pairs=2) == pairs[:2]


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("only one column", "columns"),
        ("left\t  ", "column 1 is empty"),
        ("\tright", "column 0 is empty"),
    ],
)
def test_load_tsv_pairs_names_file_and_line(tmp_path, bad_line, message):
    path = _write(tmp_path / "bad.tsv", f"a\tb\nc\td\n{bad_line}\ne\tf\n")
    with pytest.raises(ValueError, match=message) as info:
        data.load_tsv_pairs(path)
    assert f"{path}:3:" in str(info.value)


def test_load_tsv_pairs_reports_undecodable_line(tmp_path):
    path = tmp_path / "latin.tsv"
    path.write_bytes("a\tb\nca\u00f1a\tx\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin.tsv:2:.*decode"):
        data.load_tsv_pairs(path)
    assert data.load_tsv_pairs(path, encoding="latin-1")[1] == ("caña", "x")


def test_load_tsv_pairs_rejects_bad_columns(tmp_path):
    path = _write(tmp_path / "p.tsv", "a\tb\n")
    with pytest.raises(ValueError, match="target_column"):
        data.load_tsv_pairs(path, source_column=1, target_column=1)
    with pytest.raises(ValueError, match="source_column"):
        data.load_tsv_pairs(path, source_column=-1)


def test_load_jsonl_pairs(tmp_path):
    records = [{"source": "hola", "target": "hello", "id": 1}] * 2
    path = _write(
        tmp_path / "p.jsonl", "".join(json.dumps(r) + "\n" for r in records)
    )
    assert data.load_jsonl_pairs(path) == [("hola", "hello")] * 2
    swapped = data.load_jsonl_pairs(path, "target", "source")
    assert swapped == [("hello", "hola")] * 2


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ('{"source": "a", "target": ', "invalid JSON"),
        ('{"source": "a"}', "missing key 'target'"),
        ('{"source": "a", "target": 5}', "non-empty string"),
        ('["a", "b"]', "JSON object"),
    ],
)
def test_load_jsonl_pairs_names_file_and_line(tmp_path, bad_line, message):
    good = json.dumps({"source": "x", "target": "y"})
    path = _write(tmp_path / "bad.jsonl", f"{good}\n{good}\n{bad_line}\n")
    with pytest.raises(ValueError, match=message) as info:
        data.load_jsonl_pairs(path)
    assert f"{path}:3:" in str(info.value)


def test_real_spa_eng_file_loads(shared_data):
    path = shared_data / "spa-eng" / "spa.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    pairs = data.load_tsv_pairs(
        path,
        source_column=data.OTHER_COLUMN,  # Spanish -> English
        target_column=data.ENGLISH_COLUMN,
        max_pairs=2000,
    )
    assert len(pairs) == 2000
    assert pairs[0] == ("Ve.", "Go.")
    assert all(source and target for source, target in pairs)


def test_split_pairs_is_deterministic_and_disjoint():
    pairs = [(f"s{i}", f"t{i % 30}") for i in range(100)]
    train, validation, test = data.split_pairs(pairs, 0.1, 0.2, seed=1)
    assert (len(train), len(validation), len(test)) == (70, 10, 20)
    assert sorted(train + validation + test) == sorted(pairs)
    assert (train, validation, test) == data.split_pairs(pairs, 0.1, 0.2, 1)
    assert test != data.split_pairs(pairs, 0.1, 0.2, seed=2)[2]
    # Original order is kept inside each split.
    assert train == sorted(train, key=pairs.index)
    grouped = data.split_pairs(pairs, 0.1, 0.2, seed=1, group_by="target")
    targets = [{t for _, t in split} for split in grouped]
    assert not (targets[0] & targets[1] or targets[0] & targets[2])
    assert not targets[1] & targets[2]
    assert [len(t) for t in targets] == [21, 3, 6]
    with pytest.raises(ValueError, match="test_fraction"):
        data.split_pairs(pairs, 0.5, 0.5)
    with pytest.raises(ValueError, match="group_by"):
        data.split_pairs(pairs, group_by="length")


@pytest.mark.parametrize("source_end", [False, True])
def test_translation_dataset_shapes_padding_start_end(
    tokenized_pairs, source_end
):
    pairs, (source_tokenizer, target_tokenizer) = tokenized_pairs
    subset = pairs.pairs[:10]
    dataset = data.make_translation_dataset(
        subset,
        source_tokenizer,
        target_tokenizer,
        batch_size=4,
        shuffle=False,
        source_end=source_end,
    )
    batches = list(dataset.as_numpy_iterator())
    assert [b[1].shape[0] for b in batches] == [4, 4, 2]
    row = 0
    for inputs, target_out in batches:
        source, target_in = inputs["source"], inputs["target_in"]
        assert source.dtype == target_in.dtype == target_out.dtype == np.int32
        assert target_in.shape == target_out.shape
        for b in range(len(source)):
            src_text, tgt_text = subset[row]
            src = source_tokenizer.tokenize([src_text]).numpy()[0].tolist()
            tgt = target_tokenizer.tokenize([tgt_text]).numpy()[0].tolist()
            if source_end:
                src = src + [END_ID]
            n, m = len(src), len(tgt) + 1
            assert source[b, :n].tolist() == src
            assert np.all(source[b, n:] == PAD_ID)
            assert target_in[b, :m].tolist() == [START_ID] + tgt
            assert target_out[b, :m].tolist() == tgt + [END_ID]
            assert np.all(target_in[b, m:] == PAD_ID)
            assert np.all(target_out[b, m:] == PAD_ID)
            row += 1
        # Padded to the longest row of the batch, not beyond.
        assert np.any(source[:, -1] != PAD_ID)
        assert np.any(target_out[:, -1] != PAD_ID)


def test_translation_dataset_truncates_and_pads_to_max_length(tokenized_pairs):
    pairs, (source_tokenizer, target_tokenizer) = tokenized_pairs
    long_pairs = [p for p in pairs.pairs if len(p[0].split()) == 5][:6]
    dataset = data.make_translation_dataset(
        long_pairs,
        source_tokenizer,
        target_tokenizer,
        batch_size=3,
        max_length=4,
        seed=5,
        source_end=True,
    )
    for inputs, target_out in dataset:
        assert inputs["source"].shape[1] == 4
        assert inputs["target_in"].shape[1] == target_out.shape[1] == 4
        assert np.all(inputs["source"].numpy()[:, -1] == END_ID)
        assert np.all(target_out.numpy()[:, -1] == END_ID)
        assert np.all(inputs["target_in"].numpy()[:, 0] == START_ID)
    fixed = data.make_translation_dataset(
        long_pairs[:2],
        source_tokenizer,
        target_tokenizer,
        batch_size=2,
        max_length=9,
        pad_to_max_length=True,
    )
    inputs, target_out = next(iter(fixed))
    assert inputs["source"].shape == (2, 9)
    assert target_out.shape == inputs["target_in"].shape == (2, 9)


def test_length_multiple_pads_to_buckets_within_max_length(tokenized_pairs):
    pairs, (source_tokenizer, target_tokenizer) = tokenized_pairs

    def batches(**options):
        return list(
            data.make_translation_dataset(
                pairs.pairs[:64],
                source_tokenizer,
                target_tokenizer,
                batch_size=4,
                max_length=10,
                shuffle=False,
                **options,
            )
        )

    plain, bucketed = batches(), batches(length_multiple=4)
    for (inputs, target), (padded, padded_target) in zip(plain, bucketed):
        for name, a, b in [
            ("source", inputs["source"], padded["source"]),
            ("target_in", inputs["target_in"], padded["target_in"]),
            ("target_out", target, padded_target),
        ]:
            a, b = a.numpy(), b.numpy()
            length = a.shape[1]
            expected = min(-(-length // 4) * 4, 10)  # the bucket, capped
            assert b.shape == (a.shape[0], expected), name
            np.testing.assert_array_equal(b[:, :length], a)
            assert np.all(b[:, length:] == 0)  # PAD
    assert {b[0]["source"].shape[1] for b in bucketed} <= {4, 8, 10}


def test_translation_dataset_shuffle_is_seeded(tokenized_pairs):
    pairs, (source_tokenizer, target_tokenizer) = tokenized_pairs

    def first_batch_per_epoch(dataset):
        return [next(iter(dataset))[1].numpy() for _ in range(2)]

    def make(seed):
        return data.make_translation_dataset(
            pairs.pairs[:64], source_tokenizer, target_tokenizer, 8, seed=seed
        )

    a, b = first_batch_per_epoch(make(0)), first_batch_per_epoch(make(0))
    np.testing.assert_array_equal(a[0], b[0])  # same seed, same order
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], a[1])  # reshuffled each epoch
    other = first_batch_per_epoch(make(1))[0]
    assert not np.array_equal(a[0], other)


def test_translation_dataset_rejects_bad_arguments(tokenized_pairs):
    pairs, (source_tokenizer, target_tokenizer) = tokenized_pairs
    with pytest.raises(ValueError, match="max_length"):
        data.make_translation_dataset(
            pairs, source_tokenizer, target_tokenizer, max_length=1
        )
    with pytest.raises(ValueError, match="batch_size"):
        data.make_translation_dataset(
            pairs, source_tokenizer, target_tokenizer, batch_size=0
        )
    with pytest.raises(ValueError, match="pairs"):
        data.make_translation_dataset([], source_tokenizer, target_tokenizer)
