"""`attention-zoo train ehr`: records -> training -> metrics -> export.

    attention-zoo train ehr                        # synthetic patients
    attention-zoo train ehr --data records/        # the long format
    attention-zoo train ehr --data mimic-iv-demo/  # MIMIC-IV (hosp/, icu/)
    attention-zoo train ehr --data mimic-iii-demo/ # MIMIC-III (ADMISSIONS...)
    attention-zoo train ehr --data fhir-export/    # FHIR R4 (*.ndjson)
    attention-zoo train ehr --export saved_models/ehr

Patients are split by group (a person's stays stay together) into train,
validation and test. Progress bars per epoch and a checkpoint per epoch in
`--run-dir`; a run that is interrupted and restarted with the same command
resumes from its last finished epoch. After training: AUROC, AUPRC and the
Brier score on the validation and test splits, the most attended events of
a few test positives (on synthetic data, how often a planted risk code is
among them), and the export.
"""

import math

from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.commands import train_steps
from attention_zoo_apps.ehr import attributions
from attention_zoo_apps.ehr import data
from attention_zoo_apps.ehr import flags
from attention_zoo_apps.ehr.config import EHRConfig
from attention_zoo_apps.ehr.risk_model import RiskModel
from attention_zoo_apps.ehr.synthetic import RISK_CODES
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients

# A model that learns the synthetic patients in a minute or two on 2 cores
# (the full demo's EHR run: `demo_test.test_full_demo` checks its AUROC
# and that it attends to the planted codes).
SYNTHETIC_DEFAULTS = dict(
    embedding_dim=32,
    units=32,
    encoder="multihead",
    epochs=15,
    learning_rate=1e-3,
)
TOP_K = 3


def _config(args, synthetic):
    values = train_flags.config_values(
        args,
        SYNTHETIC_DEFAULTS if synthetic else {},
        ("encoder", "embedding_dim", "units", "max_events"),
        use_notes=not args.no_notes,
    )
    return EHRConfig(**values)


def load_records(args):
    """`(records, synthetic)`: the `PatientRecords` of the flags and the
    `SyntheticPatients` they came from (None for real data).

    Raises:
        ValueError: for a malformed file (`path:line: ...`).
        FileNotFoundError: for a missing file.
    """
    if not args.data:
        synthetic = make_synthetic_patients(
            args.synthetic_patients, seed=args.seed
        )
        return synthetic.records, synthetic
    records = data.load_records(args.data, args.format, args.prediction_hours)
    return records, None


def _score(value):
    """A score to 3 decimals, or "n/a" (AUROC and AUPRC need patients of
    both classes)."""
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def print_report(name, report):
    print(
        f"{name}: AUROC {_score(report['auroc'])}  AUPRC "
        f"{_score(report['auprc'])}  Brier {report['brier']:.4f}  "
        f"({report['patients']} patients, {report['positives']} positive)"
    )
    if math.isnan(report["auroc"]):
        print(f"  (AUROC and AUPRC need {name} patients of both classes)")
    train_flags.note_few_examples(name, report["patients"], "patients")


def explain_positives(risk_model, test, synthetic, shown=3):
    """Prints the top events of a few test positives; on synthetic data,
    returns the share of planted positives with a planted code among
    their top `TOP_K` events (else None)."""
    result = risk_model.predict(test, top_k=TOP_K)
    positives = [i for i in range(len(test)) if test.labels[i]]
    for i in positives[:shown]:
        events = ", ".join(
            f"{code} at {time:.1f} h ({weight:.2f})"
            for code, time, weight in result["top_events"][i]
        )
        print(f"  {test.patient_ids[i]} risk {result['risk'][i]:.2f}: {events}")
        if "note_words" in result:
            words = ", ".join(
                f"{word} ({weight:.2f})"
                for word, weight in result["note_words"][i]
            )
            print(f"    note: {words}")
    if synthetic is None:
        return None
    index = {p: i for i, p in enumerate(synthetic.records.patient_ids)}
    planted = [
        i
        for i in positives
        if synthetic.planted_events[index[test.patient_ids[i]]]
    ]
    if not planted:
        return None
    hits = [
        any(code in RISK_CODES for code, _, _ in result["top_events"][i])
        for i in planted
    ]
    share = sum(hits) / len(hits)
    print(
        f"planted code in the top {TOP_K} events: {share:.0%} of "
        f"{len(planted)} planted test positives"
    )
    return share


def write_reliance(risk_model, test, risk, run_dir):
    """Prints the test AUROC with uniform attention weights (`risk`: the
    model's test risks, already predicted), and writes it in the run
    folder for `attention-zoo explain`'s page."""
    reliance = attributions.attention_reliance(risk_model, test, risk)
    print(
        f"test AUROC with uniform attention weights: "
        f"{_score(reliance['uniform_auroc'])} (with attention "
        f"{_score(reliance['auroc'])})"
    )
    attributions.write_reliance(run_dir, reliance)


def main(argv=None):
    parser = flags.train_parser()
    with train_flags.usage_errors(parser):
        args, strategy = train_steps.parse_flags(parser, argv)
        _config(args, not args.data)  # a bad value, before any data is read
        records, synthetic = load_records(args)
        train, validation, test = data.split_patients(
            records,
            args.validation_fraction,
            args.test_fraction,
            seed=args.seed,
        )
        print(
            f"{len(train)} train, {len(validation)} validation, "
            f"{len(test)} test patients; train labels "
            f"{train.label_counts()}"
        )
        train_flags.check_fraction_splits(
            args,
            args.data or "the synthetic patients",
            "patients",
            (train, validation, test),
        )

        def create():
            config = _config(args, synthetic is not None)
            if config.use_notes and not any(n.strip() for n in train.notes):
                print("The training records have no notes: events only.")
                config = config.replace(use_notes=False)
            return RiskModel(config, strategy=strategy)

        risk_model = train_steps.start_run(
            RiskModel,
            args,
            strategy,
            create,
            config=lambda: _config(args, synthetic is not None),
        )
    if not train_steps.fit_run(
        risk_model, args, strategy, train, validation, watched=validation
    ):
        return 0  # the chief evaluates, draws and exports
    print(f"parameters: {risk_model.model.count_params():,}")
    if len(validation):
        print_report("validation", risk_model.evaluate(validation))
    report = risk_model.evaluate(test)
    print_report("test", report)
    explain_positives(risk_model, test, synthetic)
    write_reliance(risk_model, test, report["risk"], args.run_dir)
    metrics = {k: v for k, v in report.items() if k != "risk"}
    if args.export:
        examples = zip(
            train.patient_ids,
            train.codes,
            train.values,
            train.times,
            train.prediction_times,
            train.notes,
            train.labels,
        )
        train_steps.export_next_version(risk_model, args, metrics, examples)
    train_steps.print_logs_line(args)
    return 0
