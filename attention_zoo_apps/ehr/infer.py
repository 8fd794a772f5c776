"""`attention-zoo explain DIR --patient ID`: one patient's risk and what the
model attended to, as an HTML page and a PNG (`attention_zoo_apps.ehr.explain`).

    attention-zoo explain outputs/ehr --patient p00007       # synthetic
    attention-zoo explain outputs/ehr --patient 20001 --data records/ \\
        --out report.html

DIR is the run folder of `attention-zoo train ehr` (its `--run-dir`, default
`outputs/ehr`: config, vocabularies, scaler and the weights of the last
finished epoch). The patient's record is read as `train ehr` reads it: a
long-format, MIMIC-IV, MIMIC-III or FHIR folder (`--data`, `--format`), or
without `--data` the synthetic patients of the same `--synthetic-patients` and
`--seed`; so only the events and notes up to the prediction time are there.

`--out report.html` is one self-contained page (inline CSS, the figure as a
data URI): the risk, every event (time, code, value) shaded by its attention
weight beside two attributions of the risk to it (integrated gradients and
leave-one-out occlusion, `attention_zoo_apps.ehr.attributions`) with their
Kendall
tau against attention and one sentence on what attention does not show, the
risk under uniform attention weights, and the note with each word shaded by
the summed weight of its WordPiece tokens (and the words whose removal lowers
the risk most); events or words the model did not read (older than the
last `max_events` / `max_note_tokens`) are left unshaded, and a record cut
so is said on stderr in one line. `report.png` beside
it plots the events over the hours since admission, coloured by weight, the
`--top-k` most attended labelled, and the note words' weights. An unknown
patient id, or a DIR without a trained risk model (missing, an export,
another application's run folder), exits with code 2 and one line.
"""

import os
import sys

import keras

from attention_zoo.export import resolve_version
from attention_zoo_apps.common.bundle import CONFIG_FILE
from attention_zoo_apps.common.training import WEIGHTS_FILE
from attention_zoo_apps.ehr import attributions
from attention_zoo_apps.ehr import flags
from attention_zoo_apps.ehr import train
from attention_zoo_apps.ehr.explain import explain_patient
from attention_zoo_apps.ehr.explain import plot_explanation
from attention_zoo_apps.ehr.explain import render_html
from attention_zoo_apps.ehr.risk_model import RiskModel

PROG = flags.INFER_PROG


def main(argv=None):
    parser = flags.infer_parser()
    args = parser.parse_args(argv)

    if keras.backend.backend() != "tensorflow":
        # Integrated gradients take TensorFlow's gradients; a run folder
        # trained on JAX loads on TensorFlow as it is.
        return _error(
            "explain computes integrated gradients with TensorFlow: run it "
            f"with KERAS_BACKEND=tensorflow (not {keras.backend.backend()}); "
            "a run trained on JAX loads there as it is"
        )
    png_path = os.path.splitext(args.out)[0] + ".png"
    if png_path == args.out:
        parser.error("--out must not be the .png of the figure")
    problem = _not_a_run_folder(args.directory, (CONFIG_FILE, WEIGHTS_FILE))
    if problem:
        return _error(problem)
    config = os.path.join(args.directory, CONFIG_FILE)
    try:
        with open(config, encoding="utf-8") as f:
            RiskModel.config_class.from_json(f.read())
    except ValueError as error:  # e.g. another application's run
        return _error(
            f"{config} is not the config of an ehr run ({error}): pass the "
            "--run-dir of `train ehr`"
        )
    try:
        records, _ = train.load_records(args)
    except (ValueError, FileNotFoundError) as error:
        return _error(str(error))
    if args.patient not in records.patient_ids:
        source = args.data or (
            f"the synthetic patients (--synthetic-patients "
            f"{args.synthetic_patients}, --seed {args.seed})"
        )
        return _error(
            f"patient {args.patient!r} is not in {source} "
            f"({len(records)} patients)"
        )
    record = records.select([records.patient_ids.index(args.patient)])
    try:
        risk_model = RiskModel.load(args.directory)
    except (OSError, ValueError) as error:  # a damaged or mismatched file
        reason = (str(error).strip().splitlines() or [repr(error)])[0]
        return _error(
            f"cannot load the risk model in {args.directory}: {reason}"
        )
    explanation = explain_patient(risk_model, record, args.top_k)
    cut = _cut(risk_model, explanation)
    if cut:
        print(
            f"{PROG}: warning: patient {args.patient}: the model read only "
            f"{cut}; the rest is shown unshaded as not read",
            file=sys.stderr,
        )
    explanation["reliance"] = attributions.read_reliance(args.directory)
    plot_explanation(explanation, png_path, args.top_k)
    with open(png_path, "rb") as f:
        png = f.read()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(render_html(explanation, png, args.directory))
    print(
        f"patient {args.patient}: risk {explanation['risk']:.4f}; wrote "
        f"{args.out} and {png_path}"
    )
    return 0


def _cut(risk_model, explanation):
    """What the model did not read of the explained record (`the last 256
    of 300 events (max_events)`), or None when it read it all."""
    config = risk_model.config
    parts = []
    events = explanation["events"]
    if any(weight is None for *_, weight in events):
        parts.append(
            f"the last {config.max_events} of {len(events)} events (max_events)"
        )
    if explanation["note_segments"] is not None:
        tokens = risk_model.note_tokenizer.tokenize([explanation["note"]])
        count = int(tokens.row_lengths()[0])
        if count > config.max_note_tokens:
            parts.append(
                f"the last {config.max_note_tokens} of {count} note tokens "
                "(max_note_tokens)"
            )
    return " and ".join(parts) or None


def _not_a_run_folder(directory, files):
    """Why `directory` is not a run folder holding `files`, or None."""
    if not os.path.isdir(directory):
        state = "is a file" if os.path.exists(directory) else "does not exist"
        return f"{directory} {state}: pass the --run-dir of `train ehr`"
    needed = [os.path.join(directory, name) for name in files]
    if all(os.path.exists(path) for path in needed):
        return None
    try:
        version = resolve_version(directory)
    except FileNotFoundError:
        version = None
    export = version and os.path.exists(os.path.join(version, "saved_model.pb"))
    hint = " (an export; pass the --run-dir of `train ehr`)" if export else ""
    return (
        f"{directory} holds no trained risk model: expected "
        f"{' and '.join(needed)}{hint}"
    )


def _error(message):
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2
