"""EHR risk classification: seq2vec attention over a patient's record.

- `data`: the long format (`events.csv`, `notes.csv`, `labels.csv`), the
  records container, a split by patient, a code vocabulary and a value
  scaler.
- `mimic`: builds records from the MIMIC-IV (demo) tables, in-hospital
  mortality 24 hours after admission.
- `synthetic`: synthetic patients whose risk is driven by planted codes and
  note phrases, with the planted positions as ground truth.
- `model`: `build_risk_model`, code embedding plus value and time features,
  a GRU or self-attention encoder and attention pooling over the events
  (and the note); `attention_model` also returns the attention weights.
- `config`: `EHRConfig`.
- `risk_model`: `RiskModel`, vocabularies, scaler, training, prediction
  with the most attended events and note words, AUROC / AUPRC / Brier /
  calibration, save and load.
"""
