"""Figure 15.20: an electronic health record with the attended events and
note words, from an EHR risk model trained here in seconds on synthetic
patients (no EHR model is shipped: MIMIC's licence forbids it)."""

import os

from attention_zoo_apps import registry
from attention_zoo_apps.figures.gallery import Figure

PATIENTS = 800  # synthetic patients to train on
SEED = 0
TOP_K = 5
# Small enough to train in seconds on two cores, big enough to find the
# planted codes.
SETTINGS = dict(
    encoder="gru",
    embedding_dim=16,
    units=16,
    max_events=64,
    max_note_tokens=48,
    note_vocabulary_size=300,
    note_min_count=1,
    batch_size=32,
    epochs=8,
    learning_rate=1e-2,
    dropout=0.0,
    seed=SEED,
)


def _train():
    """`(risk model, test records, synthetic patients)`: trained on the
    generated patients' training split."""
    application = registry.get("ehr")
    synthetic = application.module("synthetic").make_synthetic_patients(
        PATIENTS, seed=SEED
    )
    split = application.module("records").split_patients
    train, validation, test = split(synthetic.records, seed=SEED)
    config = application.config_class()(**SETTINGS)
    risk_model = application.bundle_class()(config)
    risk_model.fit(train, validation, verbose=0)
    return risk_model, test, synthetic


def _chosen(test, synthetic):
    """Index in `test` of the first positive patient with a planted risk
    code (the first test patient when there is none)."""
    index = {p: i for i, p in enumerate(synthetic.records.patient_ids)}
    for i, patient in enumerate(test.patient_ids):
        if test.labels[i] and synthetic.planted_events[index[patient]]:
            return i
    return 0


def health_record(out):
    """Figure 15.20: one synthetic patient's events and note, attended."""
    application = registry.get("ehr")
    explain = application.module("explain")
    risk_model, test, synthetic = _train()
    chosen = _chosen(test, synthetic)
    record = test.select([chosen])
    explanation = explain.explain_patient(risk_model, record, top_k=TOP_K)
    path = os.path.join(out, "15.20-health-record.png")
    explain.plot_explanation(explanation, path, TOP_K)

    planted = set(application.module("synthetic").RISK_CODES)
    top = [code for code, _, _ in explanation["top_events"]]
    found = [code for code in top if code in planted]
    events = ", ".join(
        f"{code} {weight:.2f}" for code, _, weight in explanation["top_events"]
    )
    words = ", ".join(
        f"{word} {weight:.2f}"
        for word, weight in explanation["note_words"][:TOP_K]
    )
    auroc = risk_model.evaluate(test)["auroc"]
    caption = (
        f"A synthetic patient ({explanation['patient_id']}, label "
        f"{explanation['label']}) scored by a GRU risk model with "
        f"attention pooling over the events and the note, trained here "
        f"for {SETTINGS['epochs']} epochs on {PATIENTS} generated patients "
        f"(AUROC {auroc:.3f} on its {len(test.patient_ids)} held-out "
        f"patients): no EHR model is shipped, as MIMIC's "
        f"licence forbids it, and the book's record is a real patient "
        f"of Rajkomar et al. (2018). Risk {explanation['risk']:.3f}; bars: "
        f"each event's attention weight over the hours since admission. "
        f"Its {len(top)} most attended events: {events}; "
        f"planted risk codes (the generator's known answer) among them: "
        f"{len(found)}. Most attended note words: {words or 'none'}. The "
        f"book colours the attended words of the notes red; here the "
        f"height (and shade) is the weight. Attention is not an "
        f"attribution: `attention-zoo explain` also gives integrated "
        f"gradients and occlusion."
    )
    return Figure(
        "15.20", "An electronic health record, attended", (path,), caption
    )
