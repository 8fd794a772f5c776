"""FHIR R4: the synthetic patients written as NDJSON and Bundles come back
identical; hand-written edge cases are errors naming file and line, or
counted skips; the label, the cutoff and the CLI's format detection."""

import base64
import json

import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.ehr import data
from attention_zoo_apps.ehr import fhir
from attention_zoo_apps.ehr import fhir_resources
from attention_zoo_apps.ehr import fhir_writer
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from attention_zoo_apps.ehr.synthetic import save_synthetic_long_format

LOINC = "http://loinc.org"
PATIENT = {"reference": "Patient/a"}
STAY = {"reference": "Encounter/e1"}


def _assert_same(left, right):
    assert left.patient_ids == right.patient_ids
    assert left.codes == right.codes
    assert left.notes == right.notes
    assert left.groups == right.groups
    np.testing.assert_array_equal(left.labels, right.labels)
    np.testing.assert_array_equal(left.prediction_times, right.prediction_times)
    for lv, rv, lt, rt in zip(
        left.values, right.values, left.times, right.times
    ):
        np.testing.assert_array_equal(lv, rv)  # NaN == NaN here
        np.testing.assert_array_equal(lt, rt)  # exact, to the last bit


@pytest.mark.parametrize("layout", fhir_writer.LAYOUTS)
def test_synthetic_patients_come_back_identical(tmp_path, layout):
    synthetic = make_synthetic_patients(12, seed=4)
    fhir_writer.save_synthetic_fhir(synthetic, tmp_path, layout)
    records = fhir.load_fhir(tmp_path)
    _assert_same(records, synthetic.records)
    counts = records.counts
    # The late events, notes and discharge diagnoses are all dropped.
    assert counts["events_after_cutoff"] == 2 * 12
    assert counts["notes_after_cutoff"] == 12
    assert counts["conditions_recorded_after_cutoff"] == 12
    assert counts["deaths_kept"] == synthetic.records.num_positives
    assert data.detect_format(tmp_path) == "fhir"


def test_csv_and_fhir_give_identical_records(tmp_path):
    synthetic = make_synthetic_patients(10, seed=5)
    save_synthetic_long_format(synthetic, tmp_path / "csv")
    fhir_writer.save_synthetic_fhir(synthetic, tmp_path / "fhir")
    _assert_same(
        data.load_records(tmp_path / "csv"),
        data.load_records(tmp_path / "fhir"),
    )


@pytest.mark.parametrize("hours", [0.0, 1e-9, 23.999999, -5.25, 1 / 3])
def test_times_are_written_and_read_exactly(hours):
    start = fhir_resources.parse_time("2150-01-01T08:00:00Z")
    text = fhir_writer.format_time(fhir_writer.START, hours)
    assert fhir_resources.hours_between(
        start, fhir_resources.parse_time(text)
    ) == float(hours)


def test_time_zones_and_dates_without_a_time():
    utc = fhir_resources.parse_time("2150-01-01T08:00:00Z")
    paris = fhir_resources.parse_time("2150-01-01T10:30:00+02:00")
    assert fhir_resources.hours_between(utc, paris) == 0.5
    day = fhir_resources.parse_time("2150-01-01", end=True)
    assert fhir_resources.hours_between(utc, day) == 16.0  # end of the day
    month = fhir_resources.parse_time("2150-02", end=True)
    assert fhir_resources.hours_between(utc, month) == (31 + 28) * 24 - 8
    assert fhir_resources.parse_time("yesterday") is None
    assert fhir_resources.parse_time("2150-02-30") is None


def _encounter(key="e1", patient="a", start="2150-01-01T00:00:00Z", **extra):
    encounter = {
        "resourceType": "Encounter",
        "id": key,
        "class": {"code": "IMP"},
        "subject": {"reference": f"Patient/{patient}"},
        "period": {"start": start, "end": "2150-01-05T00:00:00Z"},
    }
    encounter.update(extra)
    return encounter


def _observation(key, hours, code="2160-0", system=LOINC, **extra):
    coding = {
        "system": system,
        "code": code,
        "display": extra.pop("display", None),
    }
    resource = {
        "resourceType": "Observation",
        "id": key,
        "status": "final",
        "code": {"coding": [coding]},
        "subject": PATIENT,
        "encounter": STAY,
    }
    if hours is not None:
        resource["effectiveDateTime"] = f"2150-01-01T{hours:02d}:00:00Z"
    resource.update(extra)
    return resource


def _write(directory, *resources, name="all.ndjson"):
    directory.mkdir(exist_ok=True)
    lines = [{"resourceType": "Patient", "id": "a"}, _encounter(), *resources]
    text = "".join(
        (r if isinstance(r, str) else json.dumps(r)) + "\n" for r in lines
    )
    (directory / name).write_text(text, encoding="utf-8")
    return directory


def _note(kind, key, when, text, **extra):
    data_ = base64.b64encode(text.encode("utf-8")).decode("ascii")
    attachment = {"contentType": "text/plain; charset=utf-8", "data": data_}
    if kind == "DocumentReference":
        resource = {
            "date": when,
            "content": [{"attachment": attachment}],
            "context": {"encounter": [STAY]},
        }
    else:
        resource = {"issued": when, "presentedForm": [attachment]}
        resource["encounter"] = STAY
    resource.update(resourceType=kind, id=key, subject=PATIENT, **extra)
    return resource


def test_codes_keep_their_system_and_display(tmp_path):
    quantity = {"value": 1.5, "unit": "mg/dL"}
    folder = _write(
        tmp_path / "f",
        _observation("o1", 3, code=None),  # no code: skipped, counted
        _observation("o2", 2, valueQuantity=quantity, display="Creatinine"),
        _observation("o3", 4, code="K1", system="http://hospital.example"),
        _observation("o4", 5, code="K2", system=None),
    )
    folder_records, names = fhir.read_fhir(folder)
    codes = folder_records.codes[0]
    assert codes == [
        "http://loinc.org|2160-0",
        "http://hospital.example|K1",
        "|K2",
    ]
    assert folder_records.values[0][0] == 1.5
    assert names == {"http://loinc.org|2160-0": "Creatinine (mg/dL)"}
    counts = folder_records.counts
    assert counts["codes_of_unknown_systems"] == 1
    assert counts["codes_without_system"] == 1
    assert counts["Observation_without_code"] == 1


def test_values_that_are_not_quantities_are_nan_and_counted(tmp_path):
    folder = _write(
        tmp_path / "f",
        _observation("o1", 1, valueString="positive"),
        _observation("o2", 2, valueInteger=7),
        _observation("o3", 3, valueQuantity={"value": 2.0, "unit": "mmol/L"}),
        _observation("o4", 4, valueQuantity={"value": 2000, "unit": "umol/L"}),
    )
    records = fhir.load_fhir(folder)
    np.testing.assert_array_equal(records.values[0], [np.nan, 7, 2, 2000])
    assert records.counts["non_numeric_values"] == 1
    assert records.counts["values_in_other_units"] == 1


def test_missing_effective_times_fall_back_to_issued_or_are_counted(tmp_path):
    folder = _write(
        tmp_path / "f",
        _observation("o1", None),
        _observation("o2", None, issued="2150-01-01T06:00:00Z"),
        _observation(
            "o3",
            1,
            valueQuantity={"value": 9.0},
            issued="2150-01-02T06:00:00Z",  # known after the cutoff
        ),
    )
    records = fhir.load_fhir(folder)
    np.testing.assert_array_equal(records.times[0], [1.0, 6.0])
    assert np.isnan(records.values[0][0])
    assert records.counts["Observation_without_time"] == 1
    assert records.counts["values_hidden_until_issued"] == 1


def test_resources_of_unknown_patients_and_encounters_are_counted(tmp_path):
    folder = _write(
        tmp_path / "f",
        _encounter("e2", patient="ghost"),
        _encounter("e3", **{"class": {"code": "AMB"}}),
        _observation("o1", 1, subject={"reference": "Patient/ghost"}),
        _observation("o2", 1, encounter={"reference": "Encounter/e3"}),
        _observation("o3", 1, encounter=None),
        {"resourceType": "Claim", "id": "c1"},
    )
    records = fhir.load_fhir(folder)
    assert records.patient_ids == ["e1"] and records.codes == [[]]
    counts = records.counts
    assert counts["encounters_without_patient"] == 1
    assert counts["encounters_not_inpatient"] == 1
    assert counts["Observation_without_patient"] == 1
    assert counts["Observation_without_admission"] == 1
    assert counts["Observation_without_encounter"] == 1
    assert counts["ignored_Claim"] == 1


@pytest.mark.parametrize(
    "resource, line, message",
    [
        (_observation("o1", 1), 4, r"duplicate id: Observation/o1 .*:3"),
        ('{"resourceType": "Observ', 4, "invalid JSON"),
        ("[1, 2]", 4, "not a FHIR resource"),
        (_observation("o2", 1, issued="soon"), 4, "`issued` is not a FHIR"),
        (
            _observation("o2", 1, subject={"reference": "Patient/b"}),
            4,
            "subject Patient/b is not the patient of Encounter/e1",
        ),
        (
            _note("DocumentReference", "d", "2150-01-01", "x")
            | {"content": [{"attachment": {"data": "%%"}}]},
            4,
            "invalid base64",
        ),
    ],
)
def test_malformed_resources_name_file_and_line(
    tmp_path, resource, line, message
):
    extra = [{"resourceType": "Patient", "id": "b"}]
    folder = _write(tmp_path / "f", _observation("o1", 1), resource, *extra)
    with pytest.raises(ValueError, match=message) as error:
        fhir.load_fhir(folder)
    assert f"all.ndjson:{line}:" in str(error.value)


def test_conditions_are_inputs_only_when_known_before_the_cutoff(tmp_path):
    def condition(key, **times):
        return {
            "resourceType": "Condition",
            "id": key,
            "code": {"coding": [{"system": LOINC, "code": key}]},
            "subject": PATIENT,
            "encounter": STAY,
            **times,
        }

    folder = _write(
        tmp_path / "f",
        condition("known", onsetDateTime="2150-01-01T02:00:00Z"),
        condition("late", onsetDateTime="2150-01-02T02:00:00Z"),
        condition(
            "discharge",
            onsetDateTime="2150-01-01T00:00:00Z",
            recordedDate="2150-01-05T00:00:00Z",
        ),
        condition("undated"),
    )
    records = fhir.load_fhir(folder)
    assert records.codes == [[f"{LOINC}|known"]]
    counts = records.counts
    assert counts["events_after_cutoff"] == 1
    assert counts["conditions_recorded_after_cutoff"] == 1
    assert counts["Condition_without_time"] == 1


def test_notes_are_decoded_and_joined_in_time_order(tmp_path):
    folder = _write(
        tmp_path / "f",
        _note("DiagnosticReport", "r1", "2150-01-01T05:00:00Z", "second"),
        _note("DocumentReference", "d1", "2150-01-01T01:00:00Z", " first "),
        _note("DocumentReference", "d2", "2150-01-03T01:00:00Z", "expired"),
        {
            "resourceType": "DiagnosticReport",
            "id": "r2",
            "issued": "2150-01-01T06:00:00Z",
            "conclusion": "third",
            "encounter": STAY,
        },
    )
    records = fhir.load_fhir(folder)
    assert records.notes == ["first\nsecond\nthird"]
    assert records.counts["notes_after_cutoff"] == 1


@pytest.mark.parametrize(
    "extra, patient, label, kept",
    [
        ({}, {}, 0, True),
        (
            {
                "hospitalization": {
                    "dischargeDisposition": {"coding": [{"code": "exp"}]}
                }
            },
            {},
            1,
            True,
        ),
        ({}, {"deceasedDateTime": "2150-01-03T00:00:00Z"}, 1, True),
        ({}, {"deceasedDateTime": "2151-01-03T00:00:00Z"}, 0, True),
        ({}, {"deceasedDateTime": "2150-01-01T20:00:00Z"}, 1, False),
        (
            {"period": {"start": "2150-01-01T00:00:00Z", "end": "2150-01-01"}},
            {},
            0,
            False,
        ),
    ],
)
def test_in_hospital_death_and_stays_that_end_before_the_cutoff(
    tmp_path, extra, patient, label, kept
):
    folder = tmp_path / "f"
    folder.mkdir()
    resources = [
        {"resourceType": "Patient", "id": "a", **patient},
        _encounter(**extra),
    ]
    text = "".join(json.dumps(r) + "\n" for r in resources)
    (folder / "x.ndjson").write_text(text, encoding="utf-8")
    records = fhir.load_fhir(folder)
    assert records.counts["deaths"] == label
    assert records.counts["admissions_kept"] == int(kept)
    if kept:
        assert records.labels.tolist() == [label]


@pytest.mark.parametrize("nested", [False, True])
def test_bundle_errors_name_the_line_of_the_resource(tmp_path, nested):
    synthetic = make_synthetic_patients(2, seed=1)
    fhir_writer.save_fhir(synthetic.records, tmp_path, "bundle")
    path = tmp_path / "bundle_00001.json"
    bundle = json.loads(path.read_text())
    again = dict(bundle["entry"][1])  # the Encounter again
    if nested:  # a second "resource" key: lines from the slower parse
        again["resource"] = {**again["resource"], "meta": {"resource": {}}}
    bundle["entry"].append(again)
    text = json.dumps(bundle, indent=1)
    path.write_text(text)
    # The line of the second Encounter's "{", the one before its type.
    line = text.count("\n", 0, text.rindex('"resourceType": "Encounter"'))
    message = f"bundle_00001.json:{line}: duplicate id: Encounter/p00001"
    with pytest.raises(ValueError, match=message):
        fhir.load_fhir(tmp_path)


def test_the_cli_names_a_truncated_line(tmp_path, capsys):
    folder = tmp_path / "fhir"
    fhir_writer.save_synthetic_fhir(make_synthetic_patients(3), folder)
    path = folder / "Observation.ndjson"
    lines = path.read_text().splitlines()
    lines[4] = lines[4][:30]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as exit_info:
        run = ["--no-tensorboard", "--run-dir", str(tmp_path / "run")]
        cli.main(["train", "ehr", "--data", str(folder), *run])
    assert exit_info.value.code == 2
    assert "Observation.ndjson:5: invalid JSON" in capsys.readouterr().err
