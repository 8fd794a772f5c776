"""EHR risk: the attention model against logistic regression.

    python -m experiments.ehr_risk --datasets synthetic
    python -m experiments.ehr_risk --datasets mimic --folds 5 --repeats 2
    python -m experiments.ehr_risk --datasets mimic3 --folds 5 --repeats 2

Datasets:

- `synthetic`: the generated patients of `attention-zoo train ehr` (1,500
  patients, `train.SYNTHETIC_DEFAULTS`, split 80/10/10 by patient, seed 0).
  Each model is trained on train, stopped on nothing (fixed epochs) and
  evaluated once on test: AUROC, AUPRC, Brier score and, for the attention
  models, how often a planted risk code is among the 3 most attended events
  of a planted test positive.
- `mimic`: the MIMIC-IV demo in `../shared/data/mimic-iv-demo` (245
  admissions with a 24 h prediction time, 14 in-hospital deaths). Far too
  small for one held-out split, so: stratified K-fold cross-validation by
  person (all stays of one `subject_id` in one fold), repeated with
  different fold assignments. Every admission gets one out-of-fold risk per
  repeat; the risks are averaged over the repeats and AUROC / AUPRC are
  computed on the pooled out-of-fold risks, with 95 % percentile bootstrap
  intervals (resampling persons) and a paired bootstrap of the AUROC
  difference to logistic regression.
- `mimic3`: the MIMIC-III demo in `../shared/data/mimic-iii-demo` (118
  admissions with a 24 h prediction time, 31 in-hospital deaths, 90
  persons; `attention_zoo_apps.ehr.mimic3`), evaluated as `mimic`.

Models:

- `attention-gru`, `attention-multihead`: `RiskModel` with the defaults of
  `EHRConfig` for real data (events only on MIMIC, which has no notes),
  fixed epochs: no setting was chosen on the evaluation folds.
- `logistic`: L2-regularised logistic regression on the same inputs made
  into a fixed vector per patient: per code (the training vocabulary),
  `log(1 + count)`, the mean and the last scaled value (the `ValueScaler`
  of the attention model), plus `log(1 + events)`. Balanced class weights
  like the attention model; the penalty is chosen by an inner 3-fold
  cross-validation on the training part only.

Prints a Markdown table per data set; with `--out DIR` it also writes them
as `DIR/ehr_risk.json`, from which `python -m experiments.pages` makes the
tables of the site's EHR quality page (`docs/quality/ehr.md`).
"""

import collections
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from scipy import optimize  # noqa: E402
from scipy.special import expit  # noqa: E402

from attention_zoo_apps.ehr import train as cli  # noqa: E402
from attention_zoo_apps.ehr.config import EHRConfig  # noqa: E402
from attention_zoo_apps.ehr.data import CodeVocabulary  # noqa: E402
from attention_zoo_apps.ehr.data import ValueScaler  # noqa: E402
from attention_zoo_apps.ehr.data import load_records  # noqa: E402
from attention_zoo_apps.ehr.data import split_patients  # noqa: E402
from attention_zoo_apps.ehr.risk_model import RiskModel  # noqa: E402
from attention_zoo_apps.ehr.risk_model import auprc  # noqa: E402
from attention_zoo_apps.ehr.risk_model import auroc  # noqa: E402
from attention_zoo_apps.ehr.risk_model import brier_score  # noqa: E402
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA as SHARED  # noqa: E402

PENALTIES = (0.01, 0.1, 1.0, 10.0)  # L2 strength per (weighted) example


# -- logistic regression on bag-of-codes features ----------------------------


class BagOfCodes:
    """A fixed vector per patient from the same events the model reads."""

    def __init__(self, records, max_events):
        self.vocabulary = CodeVocabulary.build(records)
        self.scaler = ValueScaler.fit(records)
        self.max_events = max_events

    def __call__(self, records):
        size = len(self.vocabulary)
        features = np.zeros((len(records), 3 * size + 1))
        for i, codes in enumerate(records.codes):
            start = max(len(codes) - self.max_events, 0)
            codes = codes[start:]
            ids = self.vocabulary.encode(codes)
            scaled, present = self.scaler.transform(
                codes, records.values[i][start:]
            )
            counts = np.bincount(ids, minlength=size)
            sums = np.bincount(ids, weights=scaled * present, minlength=size)
            valued = np.bincount(ids, weights=present, minlength=size)
            features[i, :size] = np.log1p(counts)
            features[i, size : 2 * size] = sums / np.maximum(valued, 1)
            for j in np.flatnonzero(present):  # the last value per code wins
                features[i, 2 * size + ids[j]] = scaled[j]
            features[i, -1] = np.log1p(len(codes))
        return features


def _fit_logistic(x, y, penalty):
    """Weights `(d + 1,)` (bias last) minimising the balanced, L2-penalised
    mean log loss."""
    counts = np.bincount(y, minlength=2)
    weight = np.where(
        y == 1, len(y) / (2 * counts[1]), len(y) / (2 * counts[0])
    )
    design = np.hstack([x, np.ones((len(x), 1))])

    def loss(w):
        z = design @ w
        # log(1 + exp(z)) - y z, stably.
        losses = np.logaddexp(0.0, z) - y * z
        p = expit(z)
        value = np.mean(weight * losses) + 0.5 * penalty * w[:-1] @ w[:-1]
        grad = design.T @ (weight * (p - y)) / len(y)
        grad[:-1] += penalty * w[:-1]
        return value, grad

    result = optimize.minimize(
        loss, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B"
    )
    return result.x


def _predict_logistic(w, x):
    return expit(x @ w[:-1] + w[-1])


class Logistic:
    """Standardised features, penalty chosen by inner cross-validation."""

    def fit(self, train, seed):
        folds = group_folds(train, 3, seed)
        scores = collections.defaultdict(list)
        for held_out in folds:
            inner = np.setdiff1d(np.arange(len(train)), held_out)
            part, rest = train.select(inner), train.select(held_out)
            if not 0 < rest.labels.sum() < len(rest):
                continue
            features = BagOfCodes(part, EHRConfig().max_events)
            x, mean, std = _standardise(features(part))
            x_rest = (features(rest) - mean) / std
            for penalty in PENALTIES:
                w = _fit_logistic(x, part.labels, penalty)
                scores[penalty].append(
                    auroc(rest.labels, _predict_logistic(w, x_rest))
                )
        self.penalty = max(PENALTIES, key=lambda p: np.mean(scores[p]))
        self.features = BagOfCodes(train, EHRConfig().max_events)
        x, self.mean, self.std = _standardise(self.features(train))
        self.w = _fit_logistic(x, train.labels, self.penalty)
        return self

    def predict(self, records):
        x = (self.features(records) - self.mean) / self.std
        return _predict_logistic(self.w, x)


def _standardise(x):
    mean, std = x.mean(0), x.std(0)
    std[std < 1e-9] = 1.0
    return (x - mean) / std, mean, std


# -- the attention model -----------------------------------------------------


class Attention:
    def __init__(self, config):
        self.config = config

    def fit(self, train, seed):
        self.model = RiskModel(self.config.replace(seed=seed))
        self.model.fit(train, verbose=0)
        return self

    def predict(self, records):
        return self.model.predict(records, top_k=0)["risk"]


def attention_config(encoder, records, overrides):
    use_notes = any(note.strip() for note in records.notes)
    return EHRConfig(
        **{**overrides, "encoder": encoder, "use_notes": use_notes}
    )


# -- cross-validation and the bootstrap --------------------------------------


def group_folds(records, folds, seed):
    """`folds` index arrays: groups (persons) dealt round-robin, the groups
    with a positive stay and the others separately (stratified)."""
    members = collections.defaultdict(list)
    for index, group in enumerate(records.groups):
        members[group].append(index)
    groups = list(members.values())
    positive = np.array([records.labels[g].max() for g in groups], bool)
    rng = np.random.default_rng(seed)
    assignment = np.zeros(len(groups), "int64")
    offset = 0
    for stratum in (np.flatnonzero(positive), np.flatnonzero(~positive)):
        order = stratum[rng.permutation(len(stratum))]
        assignment[order] = (np.arange(len(order)) + offset) % folds
        offset += len(order)
    return [
        np.sort(
            np.concatenate([groups[g] for g in np.flatnonzero(assignment == k)])
        )
        for k in range(folds)
    ]


def bootstrap(labels, risks, groups, metric, samples, seed):
    """Percentile 95 % interval of `metric(labels, risk)` for each risk of
    `risks` and of the paired differences to the first, resampling groups."""
    members = collections.defaultdict(list)
    for index, group in enumerate(groups):
        members[group].append(index)
    members = [np.array(m) for m in members.values()]
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(samples):
        chosen = rng.integers(0, len(members), len(members))
        index = np.concatenate([members[g] for g in chosen])
        if not 0 < labels[index].sum() < len(index):
            continue
        values.append([metric(labels[index], r[index]) for r in risks])
    values = np.array(values)
    intervals = np.percentile(values, [2.5, 97.5], axis=0).T
    differences = values[:, 1:] - values[:, :1]
    return intervals, np.percentile(differences, [2.5, 97.5], axis=0).T


LABELS = {
    "logistic": "logistic regression",
    "attention-gru": "attention, GRU",
    "attention-multihead": "attention, `MultiHead`",
}


def cross_validate(records, models, folds, repeats, samples):
    """`(rows, cohort)`: a row per model of pooled out-of-fold figures with
    bootstrap intervals, and the cohort's and the protocol's sizes."""
    labels = records.labels
    risks = {name: np.zeros(len(records)) for name in models}
    fold_scores = collections.defaultdict(list)
    seconds = collections.defaultdict(float)
    for repeat in range(repeats):
        for k, test_index in enumerate(group_folds(records, folds, repeat)):
            train_index = np.setdiff1d(np.arange(len(records)), test_index)
            train, test = (
                records.select(train_index),
                records.select(test_index),
            )
            for name, make in models.items():
                start = time.perf_counter()
                risk = make().fit(train, seed=repeat).predict(test)
                seconds[name] += time.perf_counter() - start
                risks[name][test_index] += risk / repeats
                fold_scores[name].append(
                    (auroc(test.labels, risk), auprc(test.labels, risk))
                )
                print(
                    f"repeat {repeat} fold {k} {name}: AUROC "
                    f"{fold_scores[name][-1][0]:.3f} ({test.num_positives} "
                    f"deaths of {len(test)})",
                    flush=True,
                )
    names = list(models)
    ordered = [risks[n] for n in names]
    cohort = {
        "admissions": len(records),
        "deaths": int(records.num_positives),
        "persons": len(set(records.groups)),
        "folds x repeats": f"{folds} x {repeats}",
        "bootstrap samples of persons": samples,
        "prevalence (the AUPRC of a random ranking)": f"{labels.mean():.3f}",
        "Brier score of a constant risk at the prevalence": (
            f"{brier_score(labels, np.full(len(labels), labels.mean())):.3f}"
        ),
    }
    roc, roc_diff = bootstrap(
        labels, ordered, records.groups, auroc, samples, 0
    )
    prc, _ = bootstrap(labels, ordered, records.groups, auprc, samples, 0)
    rows = []
    for j, name in enumerate(names):
        pooled_roc = auroc(labels, ordered[j])
        folds_roc = np.array([s[0] for s in fold_scores[name]], "float64")
        folds_roc = folds_roc[np.isfinite(folds_roc)]
        difference = (
            "-"
            if j == 0
            else f"{pooled_roc - auroc(labels, ordered[0]):+.3f} "
            f"[{roc_diff[j - 1][0]:+.3f}, {roc_diff[j - 1][1]:+.3f}]"
        )
        rows.append(
            {
                "model": LABELS.get(name, name),
                "pooled AUROC [95% CI]": f"{pooled_roc:.3f} "
                f"[{roc[j][0]:.3f}, {roc[j][1]:.3f}]",
                "pooled AUPRC [95% CI]": f"{auprc(labels, ordered[j]):.3f} "
                f"[{prc[j][0]:.3f}, {prc[j][1]:.3f}]",
                "AUROC - logistic [95% CI]": difference,
                "fold AUROC mean (sd)": (
                    f"{folds_roc.mean():.3f} ({folds_roc.std():.3f})"
                ),
                "Brier": f"{brier_score(labels, ordered[j]):.4f}",
                f"train + predict s ({folds * repeats} folds)": round(
                    seconds[name]
                ),
            }
        )
    return rows, cohort


def held_out(records, synthetic, models):
    """`(rows, split)`: a row per model of its test figures, and the
    split's sizes."""
    train, validation, test = split_patients(records, 0.1, 0.1, seed=0)
    split = {
        "train patients": len(train),
        "validation patients": len(validation),
        "test patients": len(test),
        "test positives": int(test.num_positives),
    }
    rows = []
    for name, make in models.items():
        start = time.perf_counter()
        model = make().fit(train, seed=0)
        seconds = time.perf_counter() - start
        risk = model.predict(test)
        params, planted = "-", "-"
        if isinstance(model, Attention):
            params = model.model.model.count_params()
            share = cli.explain_positives(model.model, test, synthetic, shown=0)
            planted = f"{share:.0%}"
        rows.append(
            {
                "model": LABELS.get(name, name),
                "parameters": params,
                "train s": round(seconds),
                "AUROC": f"{auroc(test.labels, risk):.3f}",
                "AUPRC": f"{auprc(test.labels, risk):.3f}",
                "Brier": f"{brier_score(test.labels, risk):.4f}",
                "planted code in top 3": planted,
            }
        )
        print(f"{name}: test AUROC {rows[-1]['AUROC']}", flush=True)
    return rows, split


def _parser():
    parser = harness.parser(
        __doc__, out_help="a folder for ehr_risk.json (the tables) and .txt"
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["synthetic", "mimic"],
        choices=["synthetic", "mimic", "mimic3"],
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--encoders", nargs="+", default=["gru", "multihead"])
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    """Per data set, its table (`DATASET`) and its sizes (`DATASET data`);
    prints them."""
    result = {}
    for dataset in args.datasets:
        print(f"\n## {dataset}", flush=True)
        if dataset == "synthetic":
            synthetic = make_synthetic_patients(1500, seed=0)
            records, overrides = synthetic.records, cli.SYNTHETIC_DEFAULTS
        else:
            name = {"mimic": "mimic-iv-demo", "mimic3": "mimic-iii-demo"}
            path = os.path.join(SHARED, name[dataset])
            if not os.path.isdir(path):
                print(f"skipped: {path} is absent")
                continue
            synthetic, overrides = None, {}
            records = load_records(path, dataset, 24.0)
        models = {"logistic": Logistic}
        for encoder in args.encoders:
            config = attention_config(encoder, records, overrides)
            models[f"attention-{encoder}"] = lambda config=config: Attention(
                config
            )
        if dataset == "synthetic":
            rows, sizes = held_out(records, synthetic, models)
        else:
            rows, sizes = cross_validate(
                records, models, args.folds, args.repeats, args.bootstrap
            )
        result[dataset] = rows
        result[f"{dataset} data"] = sizes
        print(pages.tables({dataset: rows, f"{dataset} data": sizes}))
    return result


if __name__ == "__main__":
    main()
