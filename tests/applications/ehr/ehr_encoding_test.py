"""`CodeVocabulary` and `ValueScaler`: OOV and rare codes, per-code
standardisation, save / load; `encode_events`: the last events, padded."""

import numpy as np

from attention_zoo_apps.ehr import encoding


def test_vocabulary_maps_unknown_and_rare_codes_to_oov(tmp_path, make_records):
    vocabulary = encoding.CodeVocabulary.build(make_records(), min_count=2)
    assert vocabulary.codes[:2] == [encoding.PAD, encoding.OOV]
    assert vocabulary.encode(["a", "never:seen"]).tolist() == [
        2,
        encoding.OOV_ID,
    ]
    assert vocabulary.encode(["zz"]).tolist() == [vocabulary.codes.index("zz")]
    rare = encoding.CodeVocabulary.build([["a", "a", "b"]], min_count=2)
    assert rare.encode(["a", "b"]).tolist() == [2, encoding.OOV_ID]
    assert "b" not in rare and "a" in rare
    vocabulary.save(tmp_path / "codes.txt")
    loaded = encoding.CodeVocabulary.load(tmp_path / "codes.txt")
    assert loaded.codes == vocabulary.codes
    assert loaded.decode([2, 1]) == ["a", encoding.OOV]


def test_value_scaler_standardises_per_code(tmp_path, make_records):
    records = make_records(4)  # "a": values 3, 1, 3, 1
    scaler = encoding.ValueScaler.fit(records)
    scaled, present = scaler.transform(
        ["a", "a", "b", "new"], [3, 1, np.nan, 5]
    )
    np.testing.assert_allclose(scaled, [1.0, -1.0, 0.0, 0.0])
    np.testing.assert_array_equal(present, [1, 1, 0, 1])
    scaler.save(tmp_path / "scaler.json")
    loaded = encoding.ValueScaler.load(tmp_path / "scaler.json")
    np.testing.assert_array_equal(
        loaded.transform(["a"], [3.0])[0], scaler.transform(["a"], [3.0])[0]
    )


def test_encode_events_keeps_the_last_events_padded(make_records):
    records = make_records(2)  # codes a c zz (times 0 1 2), a b (0 1)
    vocabulary = encoding.CodeVocabulary.build(records)
    arrays = encoding.encode_events(
        records, vocabulary, encoding.ValueScaler.fit(records), max_events=2
    )
    assert arrays["codes"].shape == (2, encoding.LENGTH_MULTIPLE)
    np.testing.assert_array_equal(
        arrays["event_index"][:, :3], [[1, 2, -1], [0, 1, -1]]
    )
    assert arrays["codes"][0, :3].tolist() == [
        *vocabulary.encode(["c", "zz"]).tolist(),
        encoding.EVENT_PAD_ID,
    ]
    np.testing.assert_allclose(arrays["times"][0, :2], [23.0, 22.0])
    np.testing.assert_array_equal(arrays["has_value"][1, :3], [1, 0, 0])


def test_padded_length_rounds_up_to_a_multiple():
    multiple = encoding.LENGTH_MULTIPLE
    assert encoding.padded_length(0) == multiple
    assert encoding.padded_length(multiple) == multiple
    assert encoding.padded_length(multiple + 1) == 2 * multiple
