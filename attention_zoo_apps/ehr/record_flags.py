"""`--data`, `--format` and `--prediction-hours`: where the patient records
come from, the same for `attention-zoo train ehr` and `attention-zoo
explain` (read with `data.load_records`)."""

from attention_zoo_apps.ehr import data


def add_record_arguments(parser):
    """Adds the three flags to an `argparse` parser."""
    parser.add_argument(
        "--data",
        help="a long-format folder (events.csv, labels.csv, notes.csv) or "
        "a MIMIC-IV folder (hosp/, icu/) or a MIMIC-III folder "
        "(ADMISSIONS.csv.gz, ...) or FHIR R4 files (*.ndjson bulk "
        "export, or Bundle *.json); default: synthetic patients",
    )
    parser.add_argument(
        "--format",
        choices=("auto", *data.FORMATS),
        default="auto",
        help="auto: MIMIC-IV (mimic) when the folder has "
        f"{data.MIMIC_MARKER}, MIMIC-III (mimic3) when it has "
        f"{data.MIMIC3_MARKER}, FHIR (fhir) when it has *.ndjson files "
        "(or *.json and no events.csv)",
    )
    parser.add_argument(
        "--prediction-hours",
        type=float,
        default=24.0,
        help="MIMIC-IV, MIMIC-III and FHIR: the prediction time after "
        "admission (FHIR: the Encounter's start)",
    )
