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

Prints a Markdown table per task; with `--out DIR` it also writes them as
`DIR/fine_tuning.json`, from which `python -m experiments.pages` makes the
tables of the site's fine-tuning page (`docs/quality/fine-tuning.md`).
"""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from attention_zoo_apps.entailment import data as entailment_data  # noqa: E402
from attention_zoo_apps.entailment.classifier import EntailmentClassifier  # noqa: E402
from attention_zoo_apps.entailment.config import EntailmentConfig  # noqa: E402
from attention_zoo_apps.translation import data as translation_data  # noqa: E402
from attention_zoo_apps.translation.train import warmup_steps  # noqa: E402
from attention_zoo_apps.translation.translator import Translator  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA as SHARED  # noqa: E402


def _train(bundle, train, validation, epochs, patience, learning_rate):
    """Fits `bundle` (built or not; a built one is compiled again at
    `learning_rate`, as `train --init-from --learning-rate` does) and
    returns the minutes it took."""
    start = time.perf_counter()
    if bundle.model is not None and learning_rate is not None:
        bundle.config = _at_rate(bundle.config, learning_rate, len(train))
        bundle.build()
    bundle.fit(train, validation, epochs=epochs, patience=patience, verbose=2)
    return (time.perf_counter() - start) / 60


def _at_rate(config, learning_rate, examples):
    """`config` at `learning_rate`; a Transformer's warm-up then
    inverse-square-root schedule peaks there after one epoch's updates
    over `examples` (the trainer's default warm-up for a run's data)."""
    values = {"learning_rate": learning_rate}
    if getattr(config, "learning_rate_schedule", None) == "inverse_sqrt":
        values["warmup_steps"] = warmup_steps(examples, config.batch_size)
    return config.replace(**values)


def _greedy_scores(translator, test):
    """`translator.evaluate(test)` with greedy decoding, for every side
    alike (a shipped export's recorded beam search is otherwise the
    shipped side's default)."""
    return translator.evaluate(test, beam_size=1)


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
    tuned = Translator.from_preset("translation-spa-eng")
    rows = [
        _row("`translation-spa-eng` as shipped", _greedy_scores(tuned, test))
    ]
    minutes = _train(
        tuned, mine, validation, args.epochs, args.patience, args.learning_rate
    )
    name = f"fine-tuned on the {len(mine):,} pairs"
    rows.append(_row(name, _greedy_scores(tuned, test), tuned, minutes))
    scratch = Translator(
        _at_rate(tuned.config, 1e-3, len(mine)).replace(
            epochs=args.scratch_epochs
        )
    )
    minutes = _train(
        scratch, mine, validation, args.scratch_epochs, args.patience, None
    )
    name = f"from scratch on the {len(mine):,} pairs"
    rows.append(_row(name, _greedy_scores(scratch, test), scratch, minutes))
    data = {
        "fine-tuning pairs": len(mine),
        "validation pairs": len(validation),
        "test pairs (the first of the test split)": len(test),
        "sacreBLEU": rows[0].pop("signature"),
    }
    for row in rows[1:]:
        row.pop("signature")
    return rows, data


def entailment(args):
    path = os.path.join(SHARED, "sick", "SICK.txt.gz")
    train = entailment_data.load_sick(path, "train")
    validation = entailment_data.load_sick(path, "trial")
    test = entailment_data.load_sick(path, "test")
    print(f"SICK: {len(train)} train / {len(validation)} trial / "
          f"{len(test)} test pairs")  # fmt: skip
    tuned = EntailmentClassifier.from_preset("entailment-snli")
    rows = [_row("`entailment-snli` as shipped", tuned.evaluate(test))]
    minutes = _train(
        tuned, train, validation, args.epochs, args.patience, args.learning_rate
    )
    name = "fine-tuned on SICK TRAIN (its GloVe kept fixed, as shipped)"
    rows.append(_row(name, tuned.evaluate(test), tuned, minutes))
    scratch = EntailmentClassifier(
        EntailmentConfig(embedding_dim=50, epochs=args.scratch_epochs)
    )
    print(scratch.use_word_vectors("glove-6b-50d", train))
    minutes = _train(
        scratch, train, validation, args.scratch_epochs, args.patience, None
    )
    name = "from scratch on SICK TRAIN, GloVe fine-tuned"
    rows.append(_row(name, scratch.evaluate(test), scratch, minutes))
    data = {
        "SICK TRAIN pairs": len(train),
        "SICK TRIAL pairs (validation)": len(validation),
        "SICK TEST pairs": len(test),
    }
    return rows, data


def _row(name, scores, bundle=None, minutes=None):
    """A table row: `name`, the epochs and minutes of training (none for a
    shipped model) and the test figures of `scores` (`evaluate`'s)."""
    row = {
        "model": name,
        "epochs kept / run": "-" if bundle is None else _epochs(bundle),
        "train min": "-" if minutes is None else f"{minutes:.1f}",
    }
    if "bleu" in scores:
        row["BLEU (cased)"] = f"{scores['bleu']:.2f}"
        row["chrF"] = f"{scores['chrf']:.2f}"
        row["signature"] = scores["bleu_signature"]
    else:
        row["accuracy"] = f"{100 * scores['accuracy']:.2f}%"
    return row


def _epochs(bundle):
    """`"kept / run"` of the last `fit` (early stopping keeps the best)."""
    history = bundle.model.history.history
    losses = history.get("val_loss", [])
    if not losses:
        return "-"
    best = min(range(len(losses)), key=losses.__getitem__) + 1
    return f"{best} / {len(losses)}"


def _parser():
    parser = harness.parser(
        __doc__, out_help="a folder for fine_tuning.json (the tables) and .txt"
    )
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
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    """Per task, its table (`TASK`) and its data sizes (`TASK data`);
    prints them."""
    result = {}
    for task in args.tasks:
        rows, data = {"translation": translation, "entailment": entailment}[
            task
        ](args)
        result[task] = rows
        result[f"{task} data"] = data
        print(pages.tables({task: rows, f"{task} data": data}), flush=True)
    return result


if __name__ == "__main__":
    main()
