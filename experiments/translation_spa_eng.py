"""Spanish -> English on Tatoeba (../shared/data/spa-eng): quality per model.

    python -m experiments.translation_spa_eng --configs rnn-additive \\
        --minutes 40
    python -m experiments.translation_spa_eng --epochs 4 --save-dir /tmp/spa
    python -m experiments.translation_spa_eng --epochs 1 --max-train-pairs 40000

Fixed split: `data.split_pairs(pairs, 0.05, 0.05, seed=0, group_by="source")`
of the 118,964 pairs (a Spanish sentence never appears in two splits):
about 107k train, 5.9k validation, 5.9k test. Each configuration trains for
at most `--minutes` of wall time (stopping mid-epoch when the budget runs
out; `--epochs` caps the epochs too, so configurations can be compared
at equal epochs), then is evaluated once on the test split with greedy decoding:
sacreBLEU's cased corpus BLEU (its signature printed) and chrF, and both
scores of the lower-cased hypotheses against lower-cased references beside
them. The text keeps its case unless `--lowercase` (the older setting,
which trains on lower-cased text).
Settings were chosen on the validation split; the test split is for
reporting only. `--max-train-pairs N` trains on a random sample (seed 0)
of N training pairs, the validation and test splits unchanged.
`--load-dir DIR` evaluates the translators a `--save-dir DIR` run saved
instead of training them again; `--monotonic-decoding hard` decodes
monotonic attention with the hard alignment (Raffel et al.'s inference,
`MonotonicAttention(mode="hard")`, same weights) rather than the expected
one the model trained with.

Prints a Markdown table (a row per configuration, with the validation
token accuracy and wall time of each epoch); with `--out DIR` it also
writes it as `DIR/translation_spa_eng.json`, from which `python -m
experiments.pages` makes the tables of the site's translation quality
page (`docs/quality/translation.md`).
"""

import os
import random
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402

from attention_zoo import MonotonicAttention  # noqa: E402
from attention_zoo_apps.translation import data  # noqa: E402
from attention_zoo_apps.translation.config import TranslationConfig  # noqa: E402
from attention_zoo_apps.translation.translator import Translator  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA  # noqa: E402

DATA = os.path.join(SHARED_DATA, "spa-eng", "spa.txt.gz")

BASE = dict(
    embedding_dim=256,
    units=256,
    source_vocabulary_size=8000,
    target_vocabulary_size=8000,
    max_length=32,
    batch_size=64,
    epochs=50,  # the time budget stops training first
)
CONFIGS = {
    "rnn-additive": dict(model="rnn", attention="additive"),
    "rnn-general": dict(model="rnn", attention="general"),
    "rnn-none": dict(model="rnn", attention=None),
    # Raffel et al.'s monotonic attention (expected alignments) and Luong's
    # local-p (window 8), in the same RNN (issue 20).
    "rnn-monotonic": dict(model="rnn", attention="monotonic"),
    "rnn-local": dict(model="rnn", attention="local"),
    "transformer": dict(
        model="transformer",
        model_dim=256,
        num_heads=4,
        num_layers=2,
        feed_forward_dim=1024,
    ),
}

DESCRIPTIONS = {
    "rnn-additive": "RNN, additive (Bahdanau) attention",
    "rnn-general": "RNN, general (Luong) attention",
    "rnn-none": "RNN, no attention (the bottleneck baseline)",
    "rnn-monotonic": "RNN, monotonic attention",
    "rnn-local": "RNN, local-p attention (D = 8)",
    "transformer": "Transformer (2 + 2 layers)",
}


class TimeBudget(keras.callbacks.Callback):
    """Stops training once `seconds` of wall time have passed."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        if time.perf_counter() - self.start > self.seconds:
            self.model.stop_training = True


def _parser():
    parser = harness.parser(
        __doc__,
        out_help="a folder for translation_spa_eng.json (the table) and .txt",
    )
    parser.add_argument("--data", default=DATA)
    parser.add_argument(
        "--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS)
    )
    parser.add_argument("--minutes", type=float, default=40.0)
    parser.add_argument("--epochs", type=int, default=BASE["epochs"])
    parser.add_argument("--max-pairs", type=int, default=None)
    parser.add_argument(
        "--max-train-pairs",
        type=int,
        default=None,
        help="train on a random sample (seed 0) of this many training "
        "pairs; the validation and test splits stay whole",
    )
    parser.add_argument(
        "--lowercase",
        action="store_true",
        help="train on lower-cased text (the cased scores then compare "
        "lower-cased hypotheses with cased references)",
    )
    parser.add_argument(
        "--save-dir",
        default=None,
        help="save each trained translator in SAVE_DIR/CONFIG",
    )
    parser.add_argument(
        "--load-dir",
        default=None,
        help="evaluate the translators saved in LOAD_DIR/CONFIG (by "
        "--save-dir) instead of training",
    )
    parser.add_argument(
        "--monotonic-decoding",
        choices=("expected", "hard"),
        default="expected",
        help="alignment that monotonic attention decodes with",
    )
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    """A row per configuration (trained, or loaded with `--load-dir`,
    then scored on the test split); prints them as a table."""
    pairs = data.load_tsv_pairs(
        args.data, source_column=1, target_column=0, max_pairs=args.max_pairs
    )
    train, validation, test = data.split_pairs(
        pairs, 0.05, 0.05, seed=0, group_by="source"
    )
    if args.max_train_pairs and args.max_train_pairs < len(train):
        train = random.Random(0).sample(train, args.max_train_pairs)
    print(
        f"{len(train)} train / {len(validation)} validation / "
        f"{len(test)} test pairs"
    )
    rows = []
    for name in args.configs:
        rows.append(_row(args, name, train, validation, test))
    print(pages.tables(rows), flush=True)
    return rows


def _row(args, name, train, validation, test):
    """Trains (or loads) configuration `name`, scores it on `test`."""
    settings = dict(
        BASE, epochs=args.epochs, lowercase=args.lowercase, **CONFIGS[name]
    )
    start = time.perf_counter()
    timer = harness.EpochTimer()
    if args.load_dir:
        translator = Translator.load(os.path.join(args.load_dir, name))
        # The epochs asked of the saved run (not checked: --minutes).
        epochs, accuracies = translator.config.epochs, []
    else:
        translator = Translator(TranslationConfig(**settings))
        history = translator.fit(
            train,
            validation,
            callbacks=[TimeBudget(60 * args.minutes), timer],
            verbose=2,
        )
        epochs = len(history.history["loss"])
        accuracies = history.history.get("val_accuracy", [])
    minutes = (time.perf_counter() - start) / 60
    if args.save_dir:
        translator.save(os.path.join(args.save_dir, name))
    if args.monotonic_decoding == "hard":
        attention = translator.model.get_layer("attention")
        if isinstance(attention, MonotonicAttention):
            attention.mode = "hard"  # before the first decode traces
    scores = translator.evaluate(test)
    print(
        f"{name}: BLEU {scores['bleu']:.2f} chrF {scores['chrf']:.2f} "
        f"(lower-cased: {scores['bleu_lowercase']:.2f} / "
        f"{scores['chrf_lowercase']:.2f}) after {minutes:.1f} min\n"
        f"  sacreBLEU signature: {scores['bleu_signature']}",
        flush=True,
    )
    for (source, reference), hypothesis in list(
        zip(test, scores["hypotheses"])
    )[:3]:
        print(f"  {source}\n    -> {hypothesis}\n    ({reference})")
    return {
        "model": DESCRIPTIONS[name],
        "parameters": translator.model.count_params(),
        "epochs": epochs,
        "train min": round(minutes, 1),
        "epoch s": [round(seconds) for seconds in timer.times],
        "val token acc per epoch": [round(float(a), 3) for a in accuracies],
        "test BLEU": round(scores["bleu"], 2),
        "test chrF": round(scores["chrf"], 2),
        "BLEU, lower-cased": round(scores["bleu_lowercase"], 2),
        "chrF, lower-cased": round(scores["chrf_lowercase"], 2),
    }


if __name__ == "__main__":
    main()
