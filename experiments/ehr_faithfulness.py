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

Prints Markdown tables (the site's EHR quality page, `docs/quality/ehr.md`).
"""

import argparse
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
from experiments import SHARED_DATA  # noqa: E402

MIMIC_IV = os.path.join(SHARED_DATA, "mimic-iv-demo")


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    values = np.asarray(values, "float64")
    values = values[~np.isnan(values)]
    return f"{values.mean():+.4f}" if len(values) else "n/a"


def main(argv=None):
    args = _parser().parse_args(argv)
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
    print(
        f"## {args.dataset}: {len(records)} patients, test {len(test)} "
        f"({int(labels.sum())} positive); {config.encoder}, "
        f"{args.epochs} epochs; IG {args.steps} steps; trained in "
        f"{trained - started:.0f} s\n"
    )
    print("| model | test AUROC |\n| --- | --- |")
    print(f"| attention (as trained) | {auroc(labels, scores['risk']):.3f} |")
    if config.use_notes:
        print(
            "| uniform weights over the events | "
            f"{auroc(labels, uniform_events):.3f} |"
        )
    pooled = "the events and the note" if config.use_notes else "the events"
    print(
        f"| uniform weights over {pooled} | {auroc(labels, uniform_all):.3f} |"
    )
    completeness = np.array(
        [s.sum() for s in scores["integrated_gradients"]]
    ) - (scores["risk"] - scores["baseline_risk"])
    print(
        f"\nIG completeness: max |sum IG - (f(x) - f(x'))| = "
        f"{np.abs(completeness).max():.2e}; mean Kendall tau-b with "
        f"attention (top {attributions.TAU_TOP_K} of either): IG "
        f"{_mean(scores['tau_integrated_gradients'])}, occlusion "
        f"{_mean(scores['tau_occlusion'])}\n"
    )
    positives = labels == 1
    print(
        "| k | method | comprehensiveness (all) | sufficiency (all) | "
        "comprehensiveness (positives) | sufficiency (positives) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for k in args.k:
        figures = faithfulness.comprehensiveness_sufficiency(
            risk_model, test, rankings, k
        )
        for name in rankings:
            c = figures[name]["comprehensiveness"]
            s = figures[name]["sufficiency"]
            print(
                f"| {k} | {name} | {_mean(c)} | {_mean(s)} | "
                f"{_mean(c[positives])} | {_mean(s[positives])} |"
            )
    if planted is not None:
        truth = [planted[i] for i in test_rows]
        print("\n| method | top-3 recall of the planted codes |")
        print("| --- | --- |")
        for name, ranking in rankings.items():
            recall = faithfulness.planted_recall(
                scores["event_index"], ranking, truth, k=3
            )
            print(f"| {name} | {recall:.3f} |")
        with_code = sum(1 for t in truth if len(t))
        print(f"\n({with_code} test patients with a planted code)")
    print(f"\ntotal {time.time() - started:.0f} s")


def _rows_of(records, part):
    """The rows of `records` that `part`'s patients came from."""
    where = {pid: i for i, pid in enumerate(records.patient_ids)}
    return [where[pid] for pid in part.patient_ids]


if __name__ == "__main__":
    main()
