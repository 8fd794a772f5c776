"""Does starting from a shipped model pay? Fine-tuning against training from
scratch on the same small data, scored on the same test examples.

    python -m experiments.fine_tuning                       # both
    python -m experiments.fine_tuning --tasks translation

- translation: `translation-spa-eng` fine-tuned on 2,000 Tatoeba pairs it
  never trained on (from the validation split of its own training command:
  the model saw those only as validation loss, no choice was made on them)
  against the same model trained from scratch on those 2,000 pairs (its own
  vocabularies learned from them); 200 more held-out pairs are the
  validation data of both (early stopping); both translate the first
  `--test-pairs` pairs of the test split (greedy, cased sacreBLEU).
- entailment: `entailment-snli` (trained on SNLI, image captions) fine-tuned
  on SICK's TRAIN split (4,439 pairs, another corpus: sentences about
  videos and images, written and labelled differently) against the same
  model trained from scratch on SICK TRAIN with GloVe 6B 50-d fine-tuned
  (the application's default); both validate on SICK TRIAL and are tested
  once on SICK TEST (4,906 pairs).

Both sides train with Adam and early stopping on the validation loss
(`--patience`, the best epoch kept). The fine-tuned side keeps the shipped
vocabulary and sizes; new words go through its subwords.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from attention_zoo_apps.entailment import data as entailment_data  # noqa: E402
from attention_zoo_apps.entailment.classifier import EntailmentClassifier  # noqa: E402
from attention_zoo_apps.entailment.config import EntailmentConfig  # noqa: E402
from attention_zoo_apps.translation import data as translation_data  # noqa: E402
from attention_zoo_apps.translation.translator import Translator  # noqa: E402
from experiments import SHARED_DATA as SHARED  # noqa: E402


def _train(bundle, train, validation, epochs, patience, learning_rate):
    """Fits `bundle` (built or not) and returns the minutes it took."""
    start = time.perf_counter()
    if bundle.model is not None and learning_rate is not None:
        bundle.model.optimizer.learning_rate.assign(learning_rate)
    bundle.fit(train, validation, epochs=epochs, patience=patience, verbose=2)
    return (time.perf_counter() - start) / 60


def translation(args):
    pairs = translation_data.load_tsv_pairs(
        os.path.join(SHARED, "spa-eng", "spa.txt.gz"),
        source_column=1,
        target_column=0,
    )
    _, held_out, test = translation_data.split_pairs(
        pairs, 0.05, 0.05, seed=0, group_by="source"
    )
    mine = held_out[: args.pairs]
    validation = held_out[args.pairs : args.pairs + 200]
    test = test[: args.test_pairs]
    print(f"{len(mine)} fine-tuning / {len(validation)} validation / "
          f"{len(test)} test pairs")  # fmt: skip
    rows = []
    tuned = Translator.from_preset("translation-spa-eng")
    shipped = tuned.evaluate(test)
    rows.append(("translation-spa-eng as shipped", 0, 0.0, shipped))
    minutes = _train(
        tuned, mine, validation, args.epochs, args.patience, args.learning_rate
    )
    rows.append(("fine-tuned from translation-spa-eng", _epochs(tuned),
                 minutes, tuned.evaluate(test)))  # fmt: skip
    scratch = Translator(
        tuned.config.replace(learning_rate=1e-3, epochs=args.scratch_epochs)
    )
    minutes = _train(
        scratch, mine, validation, args.scratch_epochs, args.patience, None
    )
    rows.append(("from scratch, same model, same pairs", _epochs(scratch),
                 minutes, scratch.evaluate(test)))  # fmt: skip
    print("\n| translation (spa->eng) | epochs kept / run | train min | "
          "test BLEU (cased) | test chrF |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, epochs, minutes, scores in rows:
        print(f"| {name} | {epochs} | {minutes:.1f} | {scores['bleu']:.2f} | "
              f"{scores['chrf']:.2f} |")  # fmt: skip
    print(f"sacreBLEU {rows[0][3]['bleu_signature']}")


def entailment(args):
    path = os.path.join(SHARED, "sick", "SICK.txt.gz")
    train = entailment_data.load_sick(path, "train")
    validation = entailment_data.load_sick(path, "trial")
    test = entailment_data.load_sick(path, "test")
    print(f"SICK: {len(train)} train / {len(validation)} trial / "
          f"{len(test)} test pairs")  # fmt: skip
    rows = []
    tuned = EntailmentClassifier.from_preset("entailment-snli")
    rows.append(("entailment-snli as shipped", 0, 0.0, tuned.evaluate(test)))
    minutes = _train(
        tuned, train, validation, args.epochs, args.patience, args.learning_rate
    )
    rows.append(("fine-tuned from entailment-snli", _epochs(tuned), minutes,
                 tuned.evaluate(test)))  # fmt: skip
    scratch = EntailmentClassifier(
        EntailmentConfig(embedding_dim=50, epochs=args.scratch_epochs)
    )
    print(scratch.use_word_vectors("glove-6b-50d", train))
    minutes = _train(
        scratch, train, validation, args.scratch_epochs, args.patience, None
    )
    name = "from scratch on SICK (GloVe 50-d, fine-tuned)"
    report = scratch.evaluate(test)
    rows.append((name, _epochs(scratch), minutes, report))
    print("\n| entailment (SICK test) | epochs kept / run | train min | "
          "test accuracy |")  # fmt: skip
    print("| --- | ---: | ---: | ---: |")
    for name, epochs, minutes, report in rows:
        print(f"| {name} | {epochs} | {minutes:.1f} | "
              f"{100 * report['accuracy']:.2f}% |")  # fmt: skip


def _epochs(bundle):
    """`"kept / run"` of the last `fit` (early stopping keeps the best)."""
    history = bundle.model.history.history
    losses = history.get("val_loss", [])
    if not losses:
        return "-"
    best = min(range(len(losses)), key=losses.__getitem__) + 1
    return f"{best} / {len(losses)}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=["translation", "entailment"],
        default=["translation", "entailment"],
    )
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--test-pairs", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--scratch-epochs", type=int, default=30)
    parser.add_argument("--patience", type=int, default=2)
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=3e-4,
        help="the fine-tuning learning rate (from scratch: 1e-3)",
    )
    args = parser.parse_args(argv)
    for task in args.tasks:
        globals()[task](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
