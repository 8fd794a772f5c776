"""Synthetic patients whose risk is driven by planted codes and phrases.

`make_synthetic_patients` draws patients with 10 to 60 background events
(`BACKGROUND_CODES`, about 100 codes, in increasing times within the first
24 hours) and a note of background sentences. Each risk code of `RISK_CODES`
is planted with probability `risk_code_probability` and each phrase of
`RISK_PHRASES` with `risk_phrase_probability`, at random times / word
positions; the label is drawn from a logistic model of how many were
planted:

    logit = bias + code_weight * n_codes + phrase_weight * n_phrases

so a patient with no planted item is almost never positive and one with a
planted code mostly is (about a quarter of all patients are positive with
the defaults). `DECOY_CODES` and `DECOY_PHRASES` (near misses such as
`lab:lactate_normal`, "extubated") appear in anyone with no effect on the
risk. About 5 % of patients have no note.

The ground truth for attention: `planted_events[i]` are the indices into
`records.codes[i]` of the risk codes, and `planted_note_words[i]` the
indices into `records.notes[i].split()` of the risk phrase words.

After the prediction time (24 h) each patient also gets label-revealing
events and a note (`outcome:death_note` / "patient expired" for positives,
`outcome:discharge_home` / "discharged home stable" for negatives) in
`late_events` and `late_notes`: not in `records`, but
`save_synthetic_long_format` writes them, and `load_long_format` must drop
them.
"""

import csv
import dataclasses
import os

import numpy as np

from attention_zoo_apps.ehr.long_format import save_long_format
from attention_zoo_apps.ehr.records import PatientRecords

PREDICTION_HOURS = 24.0
_LABS = (
    "sodium",
    "potassium",
    "chloride",
    "bicarbonate",
    "creatinine",
    "urea",
    "glucose",
    "calcium",
    "magnesium",
    "phosphate",
    "albumin",
    "bilirubin",
    "alt",
    "ast",
    "alkaline_phosphatase",
    "hemoglobin",
    "hematocrit",
    "platelets",
    "wbc",
    "inr",
    "ptt",
    "lipase",
    "troponin",
    "bnp",
    "crp",
    "ferritin",
    "tsh",
    "ldh",
    "ck",
    "ph",
)
_DRUGS = (
    "heparin",
    "insulin",
    "acetaminophen",
    "ondansetron",
    "pantoprazole",
    "docusate",
    "senna",
    "metoprolol",
    "lisinopril",
    "atorvastatin",
    "aspirin",
    "furosemide",
    "potassium_chloride",
    "magnesium_sulfate",
    "ceftriaxone",
    "vancomycin",
    "piperacillin",
    "oxycodone",
    "morphine",
    "lorazepam",
    "haloperidol",
    "enoxaparin",
    "levothyroxine",
    "amlodipine",
    "gabapentin",
)
_OTHER = (
    "transfer:medicine",
    "transfer:surgery",
    "transfer:cardiology",
    "transfer:neurology",
    "transfer:emergency",
    "micro:urine_culture",
    "micro:blood_culture",
    "micro:sputum_culture",
    "micro:mrsa_screen",
    "micro:stool_culture",
    "output:urine",
    "output:drain",
    "output:stool",
    "output:emesis",
    "output:chest_tube",
    "input:saline",
    "input:dextrose",
    "input:lactated_ringers",
    "input:albumin",
    "input:blood_products",
)
_ICU = (
    "icuproc:arterial_line",
    "icuproc:central_line",
    "icuproc:foley",
    "icuproc:chest_xray",
    "icuproc:ekg",
    "icuproc:ultrasound",
    "icuproc:ct_head",
    "icuproc:peripheral_line",
    "icuproc:nasogastric_tube",
    "icuproc:physical_therapy",
)
BACKGROUND_CODES = (
    *(f"lab:{name}" for name in _LABS),
    *(f"rx:{name}" for name in _DRUGS),
    *(f"emar:{name}" for name in _DRUGS[:15]),
    *_OTHER,
    *_ICU,
)
# Labs, inputs and outputs have values; the other events none (NaN).
_MEASURED = np.array(
    [c.startswith(("lab:", "input:", "output:")) for c in BACKGROUND_CODES]
)
RISK_CODES = (
    "lab:lactate_high",
    "rx:norepinephrine",
    "icuproc:intubation",
    "micro:blood_culture_positive",
    "lab:troponin_critical",
)
DECOY_CODES = (
    "lab:lactate_normal",
    "rx:norepinephrine_eye_drops",
    "icuproc:extubation",
)
RISK_PHRASES = ("intubated", "unresponsive", "hypotensive")
DECOY_PHRASES = ("extubated", "responsive", "normotensive")
BACKGROUND_SENTENCES = (
    "patient resting comfortably",
    "vitals stable overnight",
    "tolerating diet",
    "ambulating with assistance",
    "pain controlled on current regimen",
    "family at bedside",
    "continue current plan",
    "afebrile overnight",
    "no acute events",
    "plan discussed with team",
    "wound clean and dry",
    "lungs clear bilaterally",
)
LATE_CODES = {1: "outcome:death_note", 0: "outcome:discharge_home"}
LATE_NOTES = {1: "patient expired", 0: "discharged home stable"}


@dataclasses.dataclass
class SyntheticPatients:
    """Synthetic records with their planted ground truth.

    Attributes:
        records: a `PatientRecords`, events and notes up to 24 h.
        planted_events: list (per patient) of lists of int, the indices of
            the `RISK_CODES` events in `records.codes[i]`.
        planted_note_words: list of lists of int, the indices of the
            `RISK_PHRASES` words in `records.notes[i].split()`.
        probabilities: float64 array, each patient's true risk.
        late_events: list of lists of `(time, code, value)` after the
            prediction time (label-revealing; not in `records`).
        late_notes: list of lists of `(time, text)` after it.
    """

    records: PatientRecords
    planted_events: list
    planted_note_words: list
    probabilities: np.ndarray
    late_events: list
    late_notes: list


def make_synthetic_patients(
    count,
    seed=0,
    risk_code_probability=0.06,
    risk_phrase_probability=0.04,
    decoy_probability=0.15,
    bias=-5.0,
    code_weight=6.0,
    phrase_weight=3.0,
):
    """Generates `count` synthetic patients (see the module docstring).

    Args:
        count: int, how many patients.
        seed: int, the same seed gives the same patients. Defaults to `0`.
        risk_code_probability: float, the chance of each risk code.
            Defaults to `0.06`.
        risk_phrase_probability: float, the chance of each risk phrase.
            Defaults to `0.04`.
        decoy_probability: float, the chance of each decoy code and
            phrase. Defaults to `0.15`.
        bias: float, the logit with nothing planted. Defaults to `-5.0`.
        code_weight: float, added to the logit per risk code. Defaults to
            `6.0`.
        phrase_weight: float, added per risk phrase. Defaults to `3.0`.

    Returns:
        A `SyntheticPatients`.

    Example:

    >>> data = make_synthetic_patients(200, seed=1)
    >>> i = data.planted_events.index(next(p for p in data.planted_events if p))
    >>> data.records.codes[i][data.planted_events[i][0]] in RISK_CODES
    True
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(
            f"`count` must be a non-negative integer. Received: count={count!r}"
        )
    rng = np.random.default_rng(seed)
    means = rng.uniform(1.0, 100.0, len(BACKGROUND_CODES))
    fields = {k: [] for k in ("codes", "values", "times", "notes", "labels")}
    planted_events, planted_words, probabilities = [], [], []
    late_events, late_notes = [], []
    for _ in range(count):
        picks = rng.integers(len(BACKGROUND_CODES), size=rng.integers(10, 61))
        values = rng.normal(means[picks], means[picks] / 5.0)
        events = [
            (BACKGROUND_CODES[c], v if _MEASURED[c] else float("nan"))
            for c, v in zip(picks, values)
        ]
        risks = [c for c in RISK_CODES if rng.random() < risk_code_probability]
        events += [(c, _risk_value(rng, c)) for c in risks]
        events += [
            (c, _risk_value(rng, c))
            for c in DECOY_CODES
            if rng.random() < decoy_probability
        ]
        times = np.sort(rng.uniform(0.0, PREDICTION_HOURS, len(events)))
        order = rng.permutation(len(events))  # random times per event
        events = [events[j] for j in order]
        phrases = [
            p for p in RISK_PHRASES if rng.random() < risk_phrase_probability
        ]
        decoys = [p for p in DECOY_PHRASES if rng.random() < decoy_probability]
        note, words = _note(rng, phrases, decoys)
        logit = bias + code_weight * len(risks) + phrase_weight * len(phrases)
        probability = 1.0 / (1.0 + np.exp(-logit))
        label = int(rng.random() < probability)
        fields["codes"].append([c for c, _ in events])
        fields["values"].append([v for _, v in events])
        fields["times"].append(times)
        fields["notes"].append(note)
        fields["labels"].append(label)
        planted_events.append(
            [j for j, (c, _) in enumerate(events) if c in RISK_CODES]
        )
        planted_words.append(words)
        probabilities.append(probability)
        late = np.sort(rng.uniform(PREDICTION_HOURS + 0.5, 72.0, 2))
        late_events.append(
            [
                (late[0], LATE_CODES[label], float("nan")),
                (late[1], "lab:sodium", 140.0),
            ]
        )
        late_notes.append([(late[1], LATE_NOTES[label])])
    records = PatientRecords(
        patient_ids=[f"p{i:05d}" for i in range(count)],
        prediction_times=np.full(count, PREDICTION_HOURS),
        **fields,
    )
    return SyntheticPatients(
        records=records,
        planted_events=planted_events,
        planted_note_words=planted_words,
        probabilities=np.asarray(probabilities, "float64"),
        late_events=late_events,
        late_notes=late_notes,
    )


def fit_arguments(count, seed=0):
    """`count` synthetic patients as the positional arguments of
    `RiskModel.fit`: a tuple `(records,)` of `PatientRecords`."""
    return (make_synthetic_patients(count, seed=seed).records,)


def _risk_value(rng, code):
    """A value for a risk or decoy code: NaN except for labs."""
    if code == "lab:lactate_high":
        return rng.normal(6.0, 1.5)
    if code == "lab:lactate_normal":
        return rng.normal(1.2, 0.3)
    if code == "lab:troponin_critical":
        return rng.normal(2.0, 0.5)
    return float("nan")


def _note(rng, phrases, decoys):
    """A note of 2 to 6 background sentences with `phrases` and `decoys`
    each as a sentence of its own at a random place; "" for about 5 %
    of patients with nothing planted. Returns `(text, planted word indices)`.
    """
    sentences = [
        BACKGROUND_SENTENCES[k]
        for k in rng.integers(
            len(BACKGROUND_SENTENCES), size=rng.integers(2, 7)
        )
    ]
    if not phrases and not decoys and rng.random() < 0.05:
        return "", []
    for phrase in (*phrases, *decoys):
        sentences.insert(rng.integers(len(sentences) + 1), f"patient {phrase}")
    words, planted = [], []
    for sentence in sentences:
        for word in sentence.split():
            if word in RISK_PHRASES:
                planted.append(len(words))
            words.append(word)
    return " ".join(words), planted


def save_synthetic_long_format(synthetic, directory):
    """Writes the records and their late events and notes, long format.

    `load_long_format(directory)` drops the late rows (they are after the
    prediction time), so it gives back `synthetic.records` (the note as one
    row at the prediction time).
    """
    records = synthetic.records
    save_long_format(records, directory)
    directory = os.fspath(directory)
    with open(os.path.join(directory, "events.csv"), "a", newline="") as f:
        writer = csv.writer(f)
        for patient, late in zip(records.patient_ids, synthetic.late_events):
            for time, code, value in late:
                value = "" if np.isnan(value) else repr(float(value))
                writer.writerow((patient, repr(float(time)), code, value))
    with open(os.path.join(directory, "notes.csv"), "a", newline="") as f:
        writer = csv.writer(f)
        for patient, late in zip(records.patient_ids, synthetic.late_notes):
            for time, text in late:
                writer.writerow((patient, repr(float(time)), text))
