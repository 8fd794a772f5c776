"""In-hospital mortality from FHIR R4 resources, as `PatientRecords`.

`load_fhir(directory)` reads every `*.ndjson` (or `*.ndjson.gz`) file of a
folder, one resource a line as the FHIR Bulk Data export writes them (one
file per resource type; the file names do not matter, each line's
`resourceType` does), and every `*.json` file holding a Bundle (its
`entry[].resource`, references by `fullUrl` resolved, e.g. Synthea's
`urn:uuid:`) or a single resource. Files are read in name order.

The task, as MIMIC-IV's (`attention_zoo_apps.ehr.mimic`):

- One record per admission: an `Encounter` whose `class` is inpatient
  (`INPATIENT_CLASSES`; a missing class counts as inpatient). Patient id:
  the Encounter id; group: its `subject` (the `Patient` id), so a person's
  stays stay in one split.
- Prediction time: `prediction_hours` after `Encounter.period.start`.
  Admissions that end at or before it (`period.end`, or a death within the
  stay) are excluded and counted (`admissions_excluded`): their outcome is
  known when the prediction is made.
- Label, in-hospital death: 1 when `Encounter.hospitalization.
  dischargeDisposition` has the code `exp` (expired, `DEATH_DISPOSITIONS`)
  or the patient's `Patient.deceasedDateTime` falls within the stay
  (`period.start` to `period.end`; to any later time while the stay has no
  end); else 0. Neither is ever an input.
- Events, timed in hours since the encounter start and kept up to the
  prediction time (inclusive), from the resources whose `encounter` (for
  `MedicationAdministration`, `context`) is a kept admission:

  | resource | code | time | value |
  | --- | --- | --- | --- |
  | `Observation` | `code` (1) | `effective[x]` (2) | `value[x]` |
  | `MedicationRequest` | `medication[x]` | `authoredOn` | dose (3) |
  | `MedicationAdministration` | `medication[x]` | `effective[x]` | dose |
  | `Procedure` | `code` | `performed[x]` | none |
  | `Condition` | `code` | `onset[x]` | none |

  (1) each `component` when it has no value; (2) a Period's start, else
  `issued`; (3) the first `doseAndRate.doseQuantity`; `medication[x]` is
  `medicationCodeableConcept`.

  A `Condition` is an input only with an onset at or before the prediction
  time and, when it has a `recordedDate`, recorded by then too: diagnoses
  recorded at discharge are outcomes, never inputs (counted
  `conditions_recorded_after_cutoff`; one without `onsetDateTime` or
  `onsetPeriod.start` is counted `Condition_without_time`). An Observation
  `issued` after the prediction time keeps its event but not its value
  (NaN, counted `values_hidden_until_issued`).
- Notes: the text of `DocumentReference.content[].attachment` (at `date`)
  and `DiagnosticReport.presentedForm[]` (else `conclusion`; at `issued`,
  else `effective[x]`): the first attachment with inline `data` (base64,
  decoded with the `charset` of its `contentType`, UTF-8 by default) whose
  content type is text (or absent). Notes up to the prediction time are
  joined in time order with `"\\n"`.

Codes keep their system: a coding becomes the token `system|code`
(`http://loinc.org|2160-0`), the FHIR search syntax; codes of
`LOCAL_SYSTEM` become the bare code (the long format's codes written as
FHIR, see `attention_zoo_apps.ehr.fhir_writer`). Of several codings the first of
a
system in `KNOWN_SYSTEMS` is taken, else the first. Times: FHIR `dateTime`s,
exact to the digit (fractional seconds of any length); a time without a zone
is UTC; a date without a time is the end of that day (month, year) for
events and notes (never earlier than the truth) and its start for
encounters and deaths.

What is counted and skipped rather than raised (`records.counts`): a
resource of another type (`ignored_<Type>`: Claim and ExplanationOfBenefit
carry discharge diagnoses, they are never read), a `status` of
`SKIPPED_STATUSES` (`<Type>_not_done`), no time (`<Type>_without_time`), no
coding with a code (`<Type>_without_code`), no or another encounter
(`<Type>_without_encounter`, `<Type>_without_admission`), a subject absent
from the `Patient` resources (`<Type>_without_patient`), a medication by
reference (`<Type>_without_code`), a code of a system outside
`KNOWN_SYSTEMS` (kept, `codes_of_unknown_systems`; `codes_without_system`
as `|code`), a value that is not a number (`valueString`,
`valueCodeableConcept`, ...: NaN, `non_numeric_values`), a value in
another unit than the code's first (kept, `values_in_other_units`), a note
attachment without inline text (`notes_without_text`).

Errors, a `ValueError` starting with `path:line:` (for a Bundle, the line
where the resource starts): invalid JSON (a truncated line), a line that is
not a resource, a resource type twice with one id, a time that is not a FHIR
`dateTime`, a resource whose `subject` is not its encounter's patient,
invalid base64 or text.

Readable names: `PatientRecords` has no place for them (MIMIC-IV's codes
are readable labels themselves), so `read_fhir` also returns `names`, a
dict code token -> the coding's `display` (with the unit of its first
value, `"Creatinine (mg/dL)"`).
"""

import collections
import math

from attention_zoo_apps.common.loaders import line_error
from attention_zoo_apps.ehr.fhir_resources import SKIPPED_STATUSES
from attention_zoo_apps.ehr.fhir_resources import event_moment
from attention_zoo_apps.ehr.fhir_resources import has_value
from attention_zoo_apps.ehr.fhir_resources import hours_between
from attention_zoo_apps.ehr.fhir_resources import is_number
from attention_zoo_apps.ehr.fhir_resources import is_skipped
from attention_zoo_apps.ehr.fhir_resources import note_text
from attention_zoo_apps.ehr.fhir_resources import read_resources
from attention_zoo_apps.ehr.fhir_resources import time_of
from attention_zoo_apps.ehr.records import COUNT_KEYS
from attention_zoo_apps.ehr.records import PatientRecords

LOCAL_SYSTEM = "urn:attention-zoo:code"
KNOWN_SYSTEMS = (
    LOCAL_SYSTEM,
    "http://loinc.org",
    "http://snomed.info/sct",
    "http://www.nlm.nih.gov/research/umls/rxnorm",
    "http://hl7.org/fhir/sid/icd-10-cm",
    "http://hl7.org/fhir/sid/icd-10",
    "http://hl7.org/fhir/sid/icd-9-cm",
    "http://www.ama-assn.org/go/cpt",
    "http://hl7.org/fhir/sid/ndc",
    "http://hl7.org/fhir/sid/cvx",
)
INPATIENT_CLASSES = ("IMP", "ACUTE", "NONAC")
DEATH_DISPOSITIONS = ("exp",)
EVENT_TYPES = (
    "Observation",
    "MedicationRequest",
    "MedicationAdministration",
    "Procedure",
    "Condition",
)
NOTE_TYPES = ("DocumentReference", "DiagnosticReport")
__all__ = ["LOCAL_SYSTEM", "load_fhir", "read_fhir"]

# An event or note before the encounters are known: where it came from,
# its references, and what it says.
_Item = collections.namedtuple(
    "_Item", "kind path line subject encounter moment code value unit issued"
)


def read_fhir(directory, prediction_hours=24.0):
    """Reads a folder of FHIR NDJSON or Bundle files (module docstring).

    Args:
        directory: str or path-like.
        prediction_hours: float, the prediction time after the encounter
            start. Defaults to `24.0`.

    Returns:
        A tuple `(records, names)`: a `PatientRecords` in the order of the
        Encounters read (hours since the encounter start, `groups` the
        Patient ids, `counts` filled) and a dict code token -> readable
        name, for the codes that have a `display`.

    Raises:
        ValueError: `path:line: ...` for a malformed resource (see the
            module docstring); a folder with no FHIR file.
        FileNotFoundError: for a missing folder.
    """
    prediction_hours = float(prediction_hours)
    if not math.isfinite(prediction_hours):
        raise ValueError(
            "`prediction_hours` must be a finite number. "
            f"Received: prediction_hours={prediction_hours!r}"
        )
    reader = _Reader()
    for resource, path, line, full_url in read_resources(directory):
        reader.add(resource, path, line, full_url)
    records = reader.records(prediction_hours)
    names = dict(reader.names)
    for code, unit in reader.units.items():
        if code in names:
            names[code] = f"{names[code]} ({unit})"
    records.names = names
    return records, names


def load_fhir(directory, prediction_hours=24.0):
    """The `PatientRecords` of `read_fhir(directory, prediction_hours)`."""
    return read_fhir(directory, prediction_hours)[0]


def _key(resource):
    return f"{resource.get('resourceType')}/{resource.get('id')}"


class _Reader:
    """Collects the resources, then makes the records (`records`)."""

    def __init__(self):
        self.counts = collections.Counter(dict.fromkeys(COUNT_KEYS, 0))
        self.names = {}
        self.units = {}  # code token -> its first unit
        self.full_urls = {}  # Bundle fullUrl -> "Type/id"
        self.seen = {}  # "Type/id" -> (path, line)
        self.patients = {}  # "Patient/id" -> deceased moment or None
        self.encounters = []  # (path, line, resource)
        self.items = []

    def add(self, resource, path, line, full_url=None):
        if not isinstance(resource, dict) or not isinstance(
            resource.get("resourceType"), str
        ):
            raise line_error(
                path, line, "not a FHIR resource (no `resourceType`)"
            )
        kind = resource["resourceType"]
        if isinstance(full_url, str):
            self.full_urls[full_url] = _key(resource)
        if not isinstance(resource.get("id"), str) or not resource["id"]:
            if kind in ("Patient", "Encounter"):
                raise line_error(path, line, f"a {kind} without an `id`")
        else:
            key = _key(resource)
            if key in self.seen:
                raise line_error(
                    path,
                    line,
                    f"duplicate id: {key} is already at "
                    f"{':'.join(map(str, self.seen[key]))}",
                )
            self.seen[key] = (path, line)
        if kind == "Patient":
            self.patients[_key(resource)] = time_of(
                resource, "deceasedDateTime", path, line
            )
        elif kind == "Encounter":
            self.encounters.append((path, line, resource))
        elif kind in EVENT_TYPES or kind in NOTE_TYPES:
            if is_skipped(resource):
                self.counts[f"{kind}_not_done"] += 1
            else:
                self.items.extend(self._items(kind, resource, path, line))
        else:
            self.counts[f"ignored_{kind}"] += 1

    def _items(self, kind, resource, path, line):
        """The `_Item`s of one event or note resource (none: counted)."""
        moment, issued = event_moment(kind, resource, path, line)
        if moment is None:
            self.counts[f"{kind}_without_time"] += 1
            return []
        field = "context" if kind == "MedicationAdministration" else "encounter"
        encounter = resource.get(field)
        if kind == "DocumentReference":
            encounter = (
                (resource.get("context") or {}).get("encounter") or [None]
            )[0]
        subject = resource.get("subject")
        item = _Item(
            kind,
            path,
            line,
            subject,
            encounter,
            moment,
            None,
            None,
            None,
            issued,
        )
        if kind in NOTE_TYPES:
            text = note_text(kind, resource, path, line)
            if text is None:
                self.counts["notes_without_text"] += 1
                return []
            return [item._replace(value=text)]
        if kind == "Observation" and not has_value(resource):
            parts = resource.get("component") or [resource]
        else:
            parts = [resource]
        items = []
        for part in parts:
            code = self._code(kind, part, resource)
            if code is None:
                self.counts[f"{kind}_without_code"] += 1
                continue
            value, unit = self._value(kind, part, resource, code)
            items.append(item._replace(code=code, value=value, unit=unit))
        return items

    def _code(self, kind, part, resource):
        if kind.startswith("Medication"):
            concept = resource.get("medicationCodeableConcept")
        else:
            concept = part.get("code")
        codings = [
            c
            for c in (concept or {}).get("coding") or []
            if isinstance(c, dict)
            and isinstance(c.get("code"), str)
            and c["code"].strip()
        ]
        if not codings:
            return None
        coding = next(
            (c for c in codings if c.get("system") in KNOWN_SYSTEMS),
            codings[0],
        )
        system, code = coding.get("system"), coding["code"].strip()
        if system == LOCAL_SYSTEM:
            token = code
        else:
            token = f"{system or ''}|{code}"
            if not system:
                self.counts["codes_without_system"] += 1
            elif system not in KNOWN_SYSTEMS:
                self.counts["codes_of_unknown_systems"] += 1
        display = coding.get("display") or (concept or {}).get("text")
        if isinstance(display, str) and display.strip():
            self.names.setdefault(token, display.strip())
        return token

    def _value(self, kind, part, resource, code):
        """`(value, unit)`: NaN and None when there is no numeric value."""
        if kind == "MedicationRequest":
            dosage = (resource.get("dosageInstruction") or [{}])[0]
            rate = (dosage.get("doseAndRate") or [{}])[0]
            holder = _quantity(rate.get("doseQuantity"))
        elif kind == "MedicationAdministration":
            dosage = resource.get("dosage") or {}
            holder = _quantity(dosage.get("dose"))
        elif kind == "Observation":
            holder = part
        else:
            return math.nan, None
        quantity = holder.get("valueQuantity")
        if isinstance(quantity, dict):
            value, unit = quantity.get("value"), quantity.get("unit")
            unit = unit or quantity.get("code")
        else:
            value = holder.get("valueInteger", holder.get("valueDecimal"))
            unit = None
        if has_value(holder) and not is_number(value):
            self.counts["non_numeric_values"] += 1
        if not is_number(value):
            return math.nan, None
        if unit:
            first = self.units.setdefault(code, unit)
            self.counts["values_in_other_units"] += unit != first
        return float(value), unit

    def records(self, prediction_hours):
        counts = self.counts
        admissions = self._admissions(prediction_hours)
        events = {key: [] for key in admissions}  # (hours, code, value)
        texts = {key: [] for key in admissions}  # (hours, text)
        for item in self.items:
            kind, note = item.kind, item.kind in NOTE_TYPES
            subject = self._reference(item.subject)
            if subject is not None and subject not in self.patients:
                counts[f"{kind}_without_patient"] += 1
                continue
            encounter = self._reference(item.encounter)
            if encounter is None:
                counts[f"{kind}_without_encounter"] += 1
                continue
            if encounter not in admissions:
                counts[f"{kind}_without_admission"] += 1
                counts["notes_unlabelled" if note else "events_unlabelled"] += 1
                continue
            patient, start, _ = admissions[encounter]
            if subject is not None and subject != patient:
                raise line_error(
                    item.path,
                    item.line,
                    f"the subject {subject} is not the patient of "
                    f"{encounter} ({patient})",
                )
            hours = hours_between(start, item.moment)
            if hours > prediction_hours:
                counts[
                    "notes_after_cutoff" if note else "events_after_cutoff"
                ] += 1
                continue
            if note:
                if not item.value:
                    counts["empty_notes"] += 1
                else:
                    texts[encounter].append((hours, item.value))
                continue
            if kind == "Condition" and item.issued is not None:
                if hours_between(start, item.issued) > prediction_hours:
                    counts["conditions_recorded_after_cutoff"] += 1
                    continue
            value = item.value
            if kind == "Observation" and item.issued is not None:
                late = hours_between(start, item.issued) > prediction_hours
                if late and not math.isnan(value):
                    counts["values_hidden_until_issued"] += 1
                    value = math.nan
            events[encounter].append((hours, item.code, value))
        return self._assemble(admissions, events, texts, prediction_hours)

    def _admissions(self, prediction_hours):
        """`{"Encounter/id": (patient key, start, label)}` of the kept."""
        counts = self.counts
        for key in ("admissions", "deaths"):
            counts.update({key: 0, f"{key}_excluded": 0})
        kept = {}
        for path, line, encounter in self.encounters:
            if encounter.get("status") in SKIPPED_STATUSES:
                counts["encounters_not_done"] += 1
                continue
            kind = encounter.get("class") or {}
            kind = kind[0] if isinstance(kind, list) and kind else kind
            kind = kind.get("code") if isinstance(kind, dict) else None
            if kind is not None and kind not in INPATIENT_CLASSES:
                counts["encounters_not_inpatient"] += 1
                continue
            patient = self._reference(encounter.get("subject"))
            if patient not in self.patients:
                counts["encounters_without_patient"] += 1
                continue
            period = encounter.get("period") or {}
            start = time_of(period, "start", path, line)
            if start is None:
                counts["encounters_without_start"] += 1
                continue
            end = time_of(period, "end", path, line)
            death = self.patients[patient]
            if death is not None:
                after_start = hours_between(start, death) >= 0
                before_end = end is None or hours_between(death, end) >= 0
                if not (after_start and before_end):
                    death = None  # not in this stay
            hospitalization = encounter.get("hospitalization") or {}
            disposition = hospitalization.get("dischargeDisposition") or {}
            codes = {
                c.get("code")
                for c in disposition.get("coding") or []
                if isinstance(c, dict)
            }
            label = int(
                death is not None or bool(codes & set(DEATH_DISPOSITIONS))
            )
            counts["admissions"] += 1
            counts["deaths"] += label
            ends = [t for t in (end, death) if t is not None]
            if any(hours_between(start, t) <= prediction_hours for t in ends):
                counts["admissions_excluded"] += 1
                counts["deaths_excluded"] += label
                continue
            kept[_key(encounter)] = (patient, start, label)
        counts["admissions_kept"] = len(kept)
        counts["deaths_kept"] = counts["deaths"] - counts["deaths_excluded"]
        return kept

    def _assemble(self, admissions, events, texts, prediction_hours):
        ids, groups, labels, codes, values, times, notes = (
            [] for _ in range(7)
        )
        for key, (patient, _, label) in admissions.items():
            rows = sorted(events.pop(key), key=lambda e: e[0])  # stable
            self.counts["patients_without_events"] += not rows
            notes_of = sorted(texts.pop(key), key=lambda n: n[0])
            self.counts["patients_without_notes"] += not notes_of
            ids.append(key.split("/", 1)[1])
            groups.append(patient.split("/", 1)[1])
            labels.append(label)
            codes.append([r[1] for r in rows])
            values.append([r[2] for r in rows])
            times.append([r[0] for r in rows])
            notes.append("\n".join(text for _, text in notes_of))
        return PatientRecords(
            patient_ids=ids,
            codes=codes,
            values=values,
            times=times,
            notes=notes,
            labels=labels,
            prediction_times=[prediction_hours] * len(ids),
            groups=groups,
            counts=dict(self.counts),
        )

    def _reference(self, value):
        """`"Type/id"` of a Reference (a fullUrl, relative or absolute);
        None when there is none."""
        reference = value.get("reference") if isinstance(value, dict) else None
        if not isinstance(reference, str) or not reference:
            return None
        if reference in self.full_urls:
            return self.full_urls[reference]
        parts = reference.split("/_history/")[0].rstrip("/").split("/")
        return "/".join(parts[-2:])


def _quantity(quantity):
    """A dose as an Observation's `valueQuantity` (`{}` when absent)."""
    return {} if quantity is None else {"valueQuantity": quantity}
