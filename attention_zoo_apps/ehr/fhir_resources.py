"""Reading FHIR R4 files: resources with their file and line, dateTimes.

`read_resources(directory)` yields every resource of a folder's
`*.ndjson` / `*.ndjson.gz` files (one resource a line, the FHIR Bulk Data
export) and `*.json` files (a Bundle's entries, or one resource), each with
the file and line where it starts, so every error can be `path:line:`
(`attention_zoo_apps.common.loaders.line_error`). `parse_time` reads a FHIR
`dateTime` exactly (fractional seconds of any length) and `hours_between`
gives the float nearest to the exact difference, so times written by
`attention_zoo_apps.ehr.fhir_writer` come back to the last bit. `note_text`
decodes a note's base64 attachment.
"""

import base64
import binascii
import bisect
import datetime
import json
import json.decoder
import json.scanner
import math
import os
import re

from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.common.loaders import line_error

_EPOCH = datetime.date(1970, 1, 1).toordinal()
_DATE_TIME = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})"
    r"(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?"
)
# A Bundle entry's resource key (a quote in a JSON string is escaped).
_RESOURCE_KEY = re.compile(r'(?<!\\)"resource"\s*:\s*\{')


def parse_time(text, end=False):
    """A FHIR `dateTime` as `(units, digits)`: `units * 10**-digits`
    seconds since 1970 UTC, exact; None when `text` is not one. A date
    without a time is its start, or with `end` the start of the next day
    (month, year)."""
    match = _DATE_TIME.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    year, month, day = int(year), int(month or 1), int(day or 1)
    try:
        date = datetime.date(year, month, day)
        if end and hour is None:  # the start of the next period
            if match.group(3):
                date += datetime.timedelta(days=1)
            elif match.group(2):
                date = datetime.date(year + month // 12, month % 12 + 1, 1)
            else:
                date = datetime.date(year + 1, 1, 1)
    except ValueError:
        return None
    seconds = (date.toordinal() - _EPOCH) * 86400
    seconds += int(hour or 0) * 3600 + int(minute or 0) * 60
    seconds += int(second or 0)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    fraction = fraction or ""
    return seconds * 10 ** len(fraction) + int(fraction or 0), len(fraction)


def hours_between(start, moment):
    """Hours from `start` to `moment` (both from `parse_time`), the float
    nearest to the exact difference."""
    digits = max(start[1], moment[1])
    delta = moment[0] * 10 ** (digits - moment[1])
    delta -= start[0] * 10 ** (digits - start[1])
    return delta / (3600 * 10**digits)  # int / int: correctly rounded


def fhir_files(directory):
    """The FHIR files of a folder, in name order: `*.ndjson`,
    `*.ndjson.gz` and `*.json`."""
    names = sorted(os.listdir(directory))
    suffixes = (".ndjson", ".ndjson.gz", ".json")
    return [os.path.join(directory, n) for n in names if n.endswith(suffixes)]


def read_resources(directory):
    """Yields `(resource, path, line, full_url)` for every NDJSON line and
    Bundle entry of the FHIR files of `directory` (`fhir_files`), `line`
    where the resource starts, `full_url` its Bundle entry's `fullUrl` or
    None. The resources are as parsed: not checked.

    Raises:
        ValueError: `path:line: ...` for invalid JSON or UTF-8, a Bundle
            entry without a resource; a folder without FHIR files.
        FileNotFoundError: for a missing folder.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: no such folder")
    paths = fhir_files(directory)
    if not paths:
        raise ValueError(
            f"{directory}: no FHIR files (*.ndjson, *.ndjson.gz, *.json)"
        )
    for path in paths:
        if path.endswith(".json"):
            yield from _bundle(path)
            continue
        for line, text in iter_lines(path):
            try:
                resource = json.loads(text)
            except json.JSONDecodeError as error:
                raise line_error(
                    path, line, f"invalid JSON (a truncated line?): {error}"
                ) from None
            yield resource, path, line, None


def _bundle(path):
    """Yields the resources of a Bundle file (or its one resource) with the
    line where each starts."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise line_error(path, line, f"cannot decode as UTF-8: {error}")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise line_error(
            path, error.lineno, f"invalid JSON: {error.msg}"
        ) from None
    if not isinstance(document, dict) or document.get("resourceType") != (
        "Bundle"
    ):
        yield document, path, 1, None
        return
    entries = document.get("entry") or []
    starts = _entry_starts(text, entries)
    newlines = [m.start() for m in re.finditer("\n", text)]
    for entry, start in zip(entries, starts):
        line = bisect.bisect_left(newlines, start) + 1
        resource = entry.get("resource") if isinstance(entry, dict) else None
        if resource is None:
            raise line_error(path, line, "a Bundle entry without a resource")
        yield resource, path, line, entry.get("fullUrl")


def _entry_starts(text, entries):
    """The offsets where each entry's resource (else the entry) starts.

    Fast: the `"resource": {` keys of the text, when there is one per
    entry (all resources objects); else a second, slower parse that notes
    where every object starts.
    """
    resources = [e.get("resource") for e in entries if isinstance(e, dict)]
    if len(resources) == len(entries) and all(
        isinstance(r, dict) for r in resources
    ):
        keys = [m.end() - 1 for m in _RESOURCE_KEY.finditer(text)]
        if len(keys) == len(entries):
            return keys
    starts = {}  # id(object) -> offset of its "{"

    def parse_object(string_and_end, *args):
        result = json.decoder.JSONObject(string_and_end, *args)
        starts[id(result[0])] = string_and_end[1] - 1
        return result

    decoder = json.JSONDecoder()
    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # uses it
    document = decoder.decode(text)
    offsets = []
    for entry in document.get("entry") or []:
        inner = entry.get("resource") if isinstance(entry, dict) else None
        offsets.append(starts.get(id(inner), starts.get(id(entry), 0)))
    return offsets


def time_of(holder, field, path, line, end=False):
    """The moment of `holder[field]` (see `parse_time`), None when absent;
    a `path:line:` error when it is not a FHIR dateTime."""
    text = holder.get(field)
    if text is None:
        return None
    moment = parse_time(text, end)
    if moment is None:
        raise line_error(
            path, line, f"`{field}` is not a FHIR dateTime: {text!r}"
        )
    return moment


def is_number(value):
    """Whether `value` (parsed JSON) is a finite number."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def note_text(kind, resource, path, line):
    """The text of a note resource, stripped; None when it has none."""
    if kind == "DocumentReference":
        attachments = [
            c.get("attachment") for c in resource.get("content") or []
        ]
    else:
        attachments = list(resource.get("presentedForm") or [])
    for attachment in attachments:
        if not isinstance(attachment, dict) or "data" not in attachment:
            continue
        content_type = attachment.get("contentType") or "text/plain"
        if not content_type.startswith("text/"):
            continue
        charset = re.search(r"charset=([\w.:-]+)", content_type)
        try:
            raw = base64.b64decode(attachment["data"], validate=True)
            text = raw.decode(charset.group(1) if charset else "utf-8")
        except (binascii.Error, TypeError, ValueError, LookupError) as error:
            raise line_error(
                path,
                line,
                f"{kind} attachment: invalid base64 or text: {error}",
            ) from None
        return text.strip()
    conclusion = resource.get("conclusion")
    if kind == "DiagnosticReport" and isinstance(conclusion, str):
        return conclusion.strip()
    return None


# Statuses of resources that did not happen (skipped and counted).
SKIPPED_STATUSES = ("entered-in-error", "not-done", "cancelled", "planned")
# What a resource of each kind is timed by: the fields of its moment, in
# order of preference, and the field of when it was issued or recorded.
EVENT_TIMES = {
    "Observation": (
        ("effectiveDateTime", "effectiveInstant", "effectivePeriod"),
        "issued",
    ),
    "MedicationRequest": (("authoredOn",), None),
    "MedicationAdministration": (
        ("effectiveDateTime", "effectivePeriod"),
        None,
    ),
    "Procedure": (("performedDateTime", "performedPeriod"), None),
    "Condition": (("onsetDateTime", "onsetPeriod"), "recordedDate"),
    "DocumentReference": (("date",), None),
    "DiagnosticReport": (
        ("issued", "effectiveDateTime", "effectivePeriod"),
        None,
    ),
}


def event_moment(kind, resource, path, line):
    """`(moment, issued)` of an event or note: its time (a Period's start)
    and, for Observations and Conditions, when it was issued or recorded."""
    fields, issued_field = EVENT_TIMES[kind]
    moment = None
    for field in fields:
        if field.endswith("Period"):
            moment = time_of(
                resource.get(field) or {}, "start", path, line, True
            )
        else:
            moment = time_of(resource, field, path, line, True)
        if moment is not None:
            break
    issued = issued_field and time_of(resource, issued_field, path, line, True)
    if moment is None and kind == "Observation":
        moment = issued
    return moment, issued


def is_skipped(resource):
    """Whether a resource's status or verification says to skip it."""
    if resource.get("status") in SKIPPED_STATUSES:
        return True
    verification = resource.get("verificationStatus") or {}
    return any(
        c.get("code") in ("entered-in-error", "refuted")
        for c in verification.get("coding") or []
        if isinstance(c, dict)
    )


def has_value(holder):
    """Whether a resource (or component) holds any `value[x]`."""
    return any(key.startswith("value") for key in holder)
