"""Writes `PatientRecords` as FHIR R4: NDJSON bulk-export files or Bundles.

`save_fhir(records, directory)` writes what
`attention_zoo_apps.ehr.fhir.load_fhir`
reads back into the same records (the same events, values, times, notes,
labels and groups), and `save_synthetic_fhir` does so for the synthetic
patients with their label-revealing late events and notes, which the
loader must drop. The test data of the FHIR loader, and a way to try a
model on FHIR without a hospital's export.

Each record is one inpatient `Encounter` (id: the patient id) of the
`Patient` of its group, starting at a whole second (one day apart per
record, from `START`) and ending an hour after its last event, late event
or prediction time. Codes are codings of `LOCAL_SYSTEM`, so they come back
unchanged; the resource type follows the code's prefix (`RESOURCE_TYPES`;
`rx:` and `emar:` events with a value carry it as the dose, a `Procedure`
has none, so a valued procedure code becomes an Observation). A value is a
`valueQuantity` (none when NaN). Times are dateTimes with the fewest
fraction-of-second digits that read back to the same float (`format_time`).
A note is a `DocumentReference` at the prediction time, its text base64;
late notes are `DiagnosticReport`s. The label is the Encounter's
`dischargeDisposition` (`exp` or `home`) and, for a positive patient with
one stay, `Patient.deceasedDateTime` at the end of the stay. Each stay also
gets a discharge diagnosis (`Condition` with onset at admission, recorded at
discharge), an outcome the loader must not read.

Layouts: `"ndjson"` writes `<Type>.ndjson` per resource type (the FHIR Bulk
Data export); `"bundle"` one collection Bundle per person
(`bundle_00000.json`, ...) whose references are the entries' `fullUrl`s
(`urn:uuid:`, as Synthea writes them). Bundles come back in person order.
"""

import base64
import collections
import datetime
import fractions
import json
import math
import os
import uuid

from attention_zoo_apps.ehr.fhir import LOCAL_SYSTEM

START = datetime.datetime(2150, 1, 1, 8, 0, 0)
RESOURCE_TYPES = {
    "rx:": "MedicationRequest",
    "emar:": "MedicationAdministration",
    "icuproc:": "Procedure",
}
LAYOUTS = ("ndjson", "bundle")
_NAMESPACE = uuid.UUID("6f1d7c1e-7a43-4c1b-9a57-2b8e0f3c5d21")


def format_time(start, hours):
    """The UTC dateTime `hours` after `start` (a naive UTC `datetime` of
    whole seconds) with the fewest fraction digits such that
    `attention_zoo_apps.ehr.fhir_resources.hours_between` gives `hours` back."""
    exact = fractions.Fraction(hours) * 3600  # seconds
    for digits in range(40):
        units = round(exact * 10**digits)
        if units / (3600 * 10**digits) == hours:
            break
    seconds, fraction = divmod(units, 10**digits)
    text = (start + datetime.timedelta(seconds=seconds)).isoformat()
    if digits:
        text += "." + str(fraction).zfill(digits)
    return text + "Z"


def save_fhir(
    records, directory, layout="ndjson", late_events=None, late_notes=None
):
    """Writes records as FHIR (see the module docstring).

    Args:
        records: a `PatientRecords`; read back with `load_fhir(directory,
            prediction_hours)` when all its prediction times equal it.
        directory: str or path-like, created if missing; existing files of
            the same names are overwritten.
        layout: `"ndjson"` or `"bundle"`. Defaults to `"ndjson"`.
        late_events: None, or per patient a list of `(time, code, value)`
            after the prediction time. Defaults to `None`.
        late_notes: None, or per patient a list of `(time, text)` after it.
            Defaults to `None`.
    """
    if layout not in LAYOUTS:
        raise ValueError(
            f"`layout` must be one of {LAYOUTS}. Received: layout={layout!r}"
        )
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    stays = collections.Counter(records.groups)
    people = {}  # group -> its resources, Patient first
    for i, patient in enumerate(records.patient_ids):
        group = records.groups[i]
        resources = people.setdefault(group, [_patient(group)])
        late = (
            late_events[i] if late_events else [],
            late_notes[i] if late_notes else [],
        )
        start = START + datetime.timedelta(days=i)
        encounter, death = _encounter(records, i, start, late)
        resources.append(encounter)
        if death is not None and records.labels[i] and stays[group] == 1:
            resources[0]["deceasedDateTime"] = death
        resources.extend(_events(records, i, start, late))
    if layout == "ndjson":
        by_type = collections.defaultdict(list)
        for resources in people.values():
            for resource in resources:
                by_type[resource["resourceType"]].append(resource)
        for kind, resources in by_type.items():
            path = os.path.join(directory, f"{kind}.ndjson")
            with open(path, "w", encoding="utf-8") as f:
                for resource in resources:
                    f.write(json.dumps(resource, separators=(",", ":")))
                    f.write("\n")
        return
    for n, resources in enumerate(people.values()):
        path = os.path.join(directory, f"bundle_{n:05d}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(_bundle(resources), f, indent=1)
            f.write("\n")


def save_synthetic_fhir(synthetic, directory, layout="ndjson"):
    """Writes `SyntheticPatients` with their late events and notes;
    `load_fhir(directory)` gives back `synthetic.records`."""
    save_fhir(
        synthetic.records,
        directory,
        layout,
        synthetic.late_events,
        synthetic.late_notes,
    )


def _patient(group):
    return {"resourceType": "Patient", "id": group}


def _reference(kind, key):
    return {"reference": f"{kind}/{key}"}


def _encounter(records, i, start, late):
    """`(Encounter, death time or None)` of record `i`."""
    patient = records.patient_ids[i]
    times = [*records.times[i], records.prediction_times[i]]
    times += [t for t, *_ in late[0]] + [t for t, _ in late[1]]
    end = format_time(start, math.ceil(max(times)) + 1.0)
    disposition = "exp" if records.labels[i] else "home"
    encounter = {
        "resourceType": "Encounter",
        "id": patient,
        "status": "finished",
        "class": {
            "system": "http://terminology.hl7.org/CodeSystem/v3-ActCode",
            "code": "IMP",
        },
        "subject": _reference("Patient", records.groups[i]),
        "period": {"start": format_time(start, 0.0), "end": end},
        "hospitalization": {
            "dischargeDisposition": {
                "coding": [
                    {
                        "system": "http://terminology.hl7.org/CodeSystem/"
                        "discharge-disposition",
                        "code": disposition,
                    }
                ]
            }
        },
    }
    return encounter, end if records.labels[i] else None


def _events(records, i, start, late):
    """The event, note and diagnosis resources of record `i`."""
    patient = records.patient_ids[i]
    refs = {
        "subject": _reference("Patient", records.groups[i]),
        "encounter": _reference("Encounter", patient),
    }
    events = zip(records.times[i], records.codes[i], records.values[i])
    resources = [
        _event(f"{patient}-{j}", time, code, value, start, refs)
        for j, (time, code, value) in enumerate([*events, *late[0]])
    ]
    cutoff = records.prediction_times[i]
    notes = [(cutoff, records.notes[i])] if records.notes[i].strip() else []
    for j, (time, text) in enumerate([*notes, *late[1]]):
        resources.append(_note(f"{patient}-{j}", time, text, j, start, refs))
    end = _encounter(records, i, start, late)[0]["period"]["end"]
    code = "dx:death" if records.labels[i] else "dx:recovered"
    resources.append(
        {
            "resourceType": "Condition",
            "id": f"{patient}-discharge",
            "code": _concept(code),
            "onsetDateTime": format_time(start, 0.0),
            "recordedDate": end,
            **refs,
        }
    )
    return resources


def _concept(code):
    return {"coding": [{"system": LOCAL_SYSTEM, "code": code}]}


def _event(key, time, code, value, start, refs):
    kind = next(
        (t for p, t in RESOURCE_TYPES.items() if code.startswith(p)),
        "Observation",
    )
    measured = not math.isnan(value)
    if kind == "Procedure" and measured:
        kind = "Observation"
    when = format_time(start, time)
    resource = {"resourceType": kind, "id": key, "status": "completed"}
    quantity = {"value": float(value)}
    if kind == "MedicationRequest":
        resource.update(
            medicationCodeableConcept=_concept(code), authoredOn=when
        )
        resource["status"] = "active"
        if measured:
            dose = {"doseAndRate": [{"doseQuantity": quantity}]}
            resource["dosageInstruction"] = [dose]
    elif kind == "MedicationAdministration":
        resource.update(
            medicationCodeableConcept=_concept(code), effectiveDateTime=when
        )
        if measured:
            resource["dosage"] = {"dose": quantity}
        refs = {"subject": refs["subject"], "context": refs["encounter"]}
    elif kind == "Procedure":
        resource.update(code=_concept(code), performedDateTime=when)
    else:
        resource.update(code=_concept(code), effectiveDateTime=when)
        resource["status"] = "final"
        if measured:
            resource["valueQuantity"] = quantity
    resource.update(refs)
    return resource


def _note(key, time, text, index, start, refs):
    """A DocumentReference (the first note) or a DiagnosticReport."""
    data = base64.b64encode(text.encode("utf-8")).decode("ascii")
    attachment = {"contentType": "text/plain; charset=utf-8", "data": data}
    when = format_time(start, time)
    if index == 0:
        return {
            "resourceType": "DocumentReference",
            "id": key,
            "status": "current",
            "subject": refs["subject"],
            "date": when,
            "content": [{"attachment": attachment}],
            "context": {"encounter": [refs["encounter"]]},
        }
    return {
        "resourceType": "DiagnosticReport",
        "id": key,
        "status": "final",
        "code": _concept("note:report"),
        "issued": when,
        "presentedForm": [attachment],
        **refs,
    }


def _bundle(resources):
    """A collection Bundle whose references are `urn:uuid:` fullUrls."""
    urls = {
        f"{r['resourceType']}/{r['id']}": "urn:uuid:"
        + str(uuid.uuid5(_NAMESPACE, f"{r['resourceType']}/{r['id']}"))
        for r in resources
    }

    def relink(value):
        if isinstance(value, dict):
            if set(value) == {"reference"}:
                return {"reference": urls.get(value["reference"])}
            return {k: relink(v) for k, v in value.items()}
        if isinstance(value, list):
            return [relink(v) for v in value]
        return value

    entries = [
        {
            "fullUrl": urls[f"{r['resourceType']}/{r['id']}"],
            "resource": relink(r),
        }
        for r in resources
    ]
    return {"resourceType": "Bundle", "type": "collection", "entry": entries}
