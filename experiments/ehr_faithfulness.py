"""EHR explanations: are the events attention points at the ones that matter?

    python -m experiments.ehr_faithfulness                     # synthetic
    python -m experiments.ehr_faithfulness --dataset mimic --epochs 5

Trains one `RiskModel` (synthetic: the `attention-zoo train ehr` data,
1,500 patients and `train.SYNTHETIC_DEFAULTS` but `--epochs`; mimic: the
MIMIC-IV demo in `../shared/data/mimic-iv-demo`, events only, `EHRConfig`
defaults), split 80/10/10 by group (seed 0), and on the test split:

- the AUROC of the model, and of the same weights with the attention
  pooling replaced by the mean over the events (uniform weights), over the
  events only and over events and note;
- per method (attention, integrated gradients, occlusion, and a random
  ranking as the control) the mean comprehensiveness and sufficiency at
  each `--k` (`attention_zoo_apps.ehr.faithfulness`), over all test patients and
  over the positives;
- the mean Kendall tau-b of integrated gradients and of occlusion with
  attention (`attention_zoo_apps.ehr.attributions.kendall_tau`);
- synthetic only: each method's top-3 recall of the planted risk codes,
  over the test patients with one.

Prints Markdown tables (the site's EHR quality page, `docs/quality/ehr.md`);
with `--out DIR` it also writes them as `DIR/ehr_faithfulness.json`, from
which `python -m experiments.pages` makes the page's tables.
"""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from attention_zoo_apps.ehr import attributions  # noqa: E402
from attention_zoo_apps.ehr import faithfulness  # noqa: E402
from attention_zoo_apps.ehr import train as cli  # noqa: E402
from attention_zoo_apps.ehr.config import EHRConfig  # noqa: E402
from attention_zoo_apps.ehr.metrics import auroc  # noqa: E402
from attention_zoo_apps.ehr.mimic import load_mimic_iv  # noqa: E402
from attention_zoo_apps.ehr.model import EVENT_ATTENTION_LAYER  # noqa: E402
from attention_zoo_apps.ehr.records import split_patients  # noqa: E402
from attention_zoo_apps.ehr.risk_model import RiskModel  # noqa: E402
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA  # noqa: E402

MIMIC_IV = os.path.join(SHARED_DATA, "mimic-iv-demo")


def _parser():
    parser = harness.parser(
        __doc__,
        out_help="a folder for ehr_faithfulness.json (the tables) and .txt",
    )
    parser.add_argument(
        "--dataset", choices=("synthetic", "mimic"), default="synthetic"
    )
    parser.add_argument("--patients", type=int, default=1500)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=attributions.STEPS)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5])
    parser.add_argument("--seed", type=int, default=0)
    return parser


def _load(args):
    """`(records, planted, config)`; `planted` None for real data."""
    if args.dataset == "synthetic":
        synthetic = make_synthetic_patients(args.patients, seed=args.seed)
        config = EHRConfig(
            **dict(cli.SYNTHETIC_DEFAULTS, epochs=args.epochs, seed=args.seed)
        )
        return synthetic.records, synthetic.planted_events, config
    records = load_mimic_iv(MIMIC_IV)
    config = EHRConfig(use_notes=False, epochs=args.epochs, seed=args.seed)
    return records, None, config


def _mean(values):
    """The mean of the numbers of `values` (NaN left out), or "n/a"."""
    values = np.asarray(values, "float64")
    values = values[~np.isnan(values)]
    return round(float(values.mean()), 4) if len(values) else "n/a"


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    """Trains, attributes and measures; prints and returns the tables."""
    started = time.time()
    records, planted, config = _load(args)
    split = split_patients(records, 0.1, 0.1, seed=args.seed)
    train, validation, test = split
    test_rows = _rows_of(records, test)
    risk_model = RiskModel(config)
    risk_model.fit(train, validation, verbose=0)
    trained = time.time()
    scores = attributions.attribute_records(risk_model, test, args.steps)
    lengths = [len(a) for a in scores["attention"]]
    rankings = {
        "attention": scores["attention"],
        "integrated_gradients": scores["integrated_gradients"],
        "occlusion": scores["occlusion"],
        "random": faithfulness.random_rankings(lengths, args.seed),
    }
    labels = test.labels
    arrays = risk_model.encode(test)
    arrays.pop("event_index")
    model = risk_model.require_model()
    uniform_all = attributions.uniform_attention_risk(model, arrays)
    uniform_events = attributions.uniform_attention_risk(
        model, arrays, layers=[EVENT_ATTENTION_LAYER]
    )
    completeness = np.array(
        [s.sum() for s in scores["integrated_gradients"]]
    ) - (scores["risk"] - scores["baseline_risk"])
    summary = {
        "data": args.dataset,
        "patients": len(records),
        "test patients": len(test),
        "test positives": int(labels.sum()),
        "encoder": config.encoder,
        "epochs": args.epochs,
        "integrated gradients steps": args.steps,
        "train s": round(trained - started),
        "IG completeness, max |sum IG - (f(x) - f(x'))|": float(
            f"{np.abs(completeness).max():.2e}"
        ),
        f"Kendall tau-b with attention (top {attributions.TAU_TOP_K}), IG": (
            _mean(scores["tau_integrated_gradients"])
        ),
        f"Kendall tau-b with attention (top {attributions.TAU_TOP_K}), "
        "occlusion": _mean(scores["tau_occlusion"]),
    }
    models = [("attention, as trained", scores["risk"])]
    if config.use_notes:
        models.append(
            ("same weights, uniform weights over the events", uniform_events)
        )
    pooled = "the events and the note" if config.use_notes else "the events"
    models.append((f"same weights, uniform weights over {pooled}", uniform_all))
    result = {
        "summary": summary,
        "auroc": [
            {"model": name, "test AUROC": round(float(auroc(labels, risk)), 3)}
            for name, risk in models
        ],
        "faithfulness": [],
    }
    positives = labels == 1
    for k in args.k:
        figures = faithfulness.comprehensiveness_sufficiency(
            risk_model, test, rankings, k
        )
        for name in rankings:
            c = figures[name]["comprehensiveness"]
            s = figures[name]["sufficiency"]
            result["faithfulness"].append(
                {
                    "k": k,
                    "method": name.replace("_", " "),
                    "comprehensiveness (all)": _mean(c),
                    "sufficiency (all)": _mean(s),
                    "comprehensiveness (positives)": _mean(c[positives]),
                    "sufficiency (positives)": _mean(s[positives]),
                }
            )
    if planted is not None:
        truth = [planted[i] for i in test_rows]
        summary["test patients with a planted code"] = sum(
            1 for t in truth if len(t)
        )
        result["planted recall"] = []
        for name, ranking in rankings.items():
            recall = faithfulness.planted_recall(
                scores["event_index"], ranking, truth, k=3
            )
            result["planted recall"].append(
                {
                    "method": name.replace("_", " "),
                    "top-3 recall of the planted codes": round(
                        float(recall), 3
                    ),
                }
            )
    summary["total s"] = round(time.time() - started)
    print(pages.tables(result))
    return result


def _rows_of(records, part):
    """The rows of `records` that `part`'s patients came from."""
    where = {pid: i for i, pid in enumerate(records.patient_ids)}
    return [where[pid] for pid in part.patient_ids]


if __name__ == "__main__":
    main()
