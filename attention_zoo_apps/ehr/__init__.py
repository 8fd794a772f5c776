"""EHR risk classification: seq2vec attention over a patient's record.

- `records`: `PatientRecords`, the records container, and a split by
  patient.
- `data`: the long format (`events.csv`, `notes.csv`, `labels.csv`) and
  `load_records`, which tells it from MIMIC-IV, MIMIC-III and FHIR.
- `mimic`, `mimic3`: records from the MIMIC-IV and MIMIC-III (demo)
  tables, in-hospital mortality 24 hours after admission.
- `fhir` (with `fhir_resources`): records from FHIR R4 bulk-export NDJSON
  or Bundles; `fhir_writer` writes records as FHIR.
- `record_flags`: `--data`, `--format`, `--prediction-hours`.
- `synthetic`: synthetic patients whose risk is driven by planted codes and
  note phrases, with the planted positions as ground truth.
- `encoding`: a code vocabulary, a value scaler and the model's event
  inputs.
- `model`: `build_risk_model`, code embedding plus value and time features,
  a GRU or self-attention encoder and attention pooling over the events
  (and the note); `attention_model` also returns the attention weights.
- `config`: `EHRConfig`.
- `risk_model`: `RiskModel`, vocabularies, scaler, training, prediction
  with the most attended events and note words, save and load; `metrics`:
  AUROC / AUPRC / Brier / calibration.
- `export`, `train`, `serve` (`attention-zoo explain`, with `explain`'s
  report) and `demo`.
"""

from attention_zoo_apps.application import Application

APPLICATION = Application(
    name="ehr",
    package=__name__,
    bundle="risk_model:RiskModel",
    infer_command="explain",
    infer_help=(
        "explain one patient's risk from an ehr run folder (`train ehr "
        "--run-dir`), not an export"
    ),
    export_inputs=("codes", "values", "times", "prediction_time", "note"),
    reads_exports=False,
    # A multihead EHR model with notes, a few thousand parameters.
    tiny_settings=dict(
        embedding_dim=8,
        units=8,
        encoder="multihead",
        num_heads=2,
        note_vocabulary_size=200,
        note_min_count=1,
        batch_size=16,
        epochs=1,
    ),
)
