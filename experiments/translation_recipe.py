"""The translation recipe, ingredient by ingredient, at equal training time.

    python -m experiments.translation_recipe --pair spa-eng \\
        --model transformer --minutes 20 \\
        --out docs/quality/results/recipe-spa-eng-transformer
    python -m experiments.translation_recipe --pair en-de \\
        --variants baseline all --minutes 20
    python -m experiments.translation_recipe --pair spa-eng \\
        --variants label-smoothing+inverse-sqrt+averaged+placeholders \\
        --epochs 7 --minutes 66 --choose-search --test

Each variant is the baseline (the defaults of `train translation`: dropout
0.1, Adam at a constant 1e-3, no smoothing, one vocabulary a side) with one
ingredient of the published recipes added, or all of them (`all`):

- `label-smoothing`: 0.1 (`--label-smoothing 0.1`);
- `inverse-sqrt`: warm-up over 1,000 updates to 1e-3, then decay with the
  inverse square root of the updates (`--learning-rate-schedule
  inverse_sqrt --warmup-steps 1000`; the RNN's decay too);
- `dropout`: 0.3, and the Transformer's attention weights 0.1;
- `tied`: the Transformer's logits from its target embeddings;
- `joint-vocabulary`: one WordPiece vocabulary of both sides;
- `averaged`: the mean weights of the last 2 epochs (the last one maybe
  cut by the time budget; `--average-checkpoints 2`);
- `placeholders`: numbers, rare names and unknown words copied
  (`--placeholders numbers,names,unknown`).

`--decoder-layers N` gives the Transformer N decoder blocks (a shallow
decoder, cheaper per decoding step; `-N-decoder` in the saved folder's
name). `--max-length N` reads and translates up to N pieces a sentence
instead of 32, which cuts about 3% of Multi30K's longer sentences
(`-length-N` in the saved folder's name).

Ingredients joined by `+` (`label-smoothing+averaged`) are a variant of
those ingredients together: the final configurations, chosen by the
single-ingredient rows.

Every variant trains for `--minutes` of wall time (stopping mid-epoch),
or `--epochs` (equal epochs: the same updates, each variant's time in
the table; a machine busy with other work then skews no comparison), and
is scored on the first 1,000 validation pairs with greedy search:
sacreBLEU's cased BLEU and chrF, the figures settings are chosen by.
`--choose-search` also picks the beam and length penalty on them
(`search_choice`); `--test` scores the test split once, with that search:
for final configurations only.

Pairs: `spa-eng` and `eng-spa`, Tatoeba (`../shared/data/spa-eng`), split
as `train translation` and the shipped models split it (5% validation,
5% test, by source sentence; the test split is the shipped models' test
sample); `en-de`, Multi30K task 1 (`../shared/data/multi30k`): its train,
val and test_2016_flickr files.

Prints a Markdown table, a row per variant; with `--out DIR` it also
writes `DIR/translation_recipe.json` for `python -m experiments.pages`.
Each variant's trained translator is saved (`Translator.save`; `load`
reads it back, `benchmarks.ctranslate2_bench` takes it) in
`--save DIR/PAIR-MODEL-VARIANT` (default `outputs/translation_recipe`;
`--save ""`: not saved).
"""

import argparse
import gzip
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402

from attention_zoo_apps.common import weight_averaging  # noqa: E402
from attention_zoo_apps.translation import data  # noqa: E402
from attention_zoo_apps.translation.config import TranslationConfig  # noqa: E402
from attention_zoo_apps.translation.search_choice import MAX_PAIRS  # noqa: E402
from attention_zoo_apps.translation.search_choice import choose_search  # noqa: E402
from attention_zoo_apps.translation.translator import Translator  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA  # noqa: E402
from experiments.translation_spa_eng import BASE  # noqa: E402
from experiments.translation_spa_eng import CONFIGS  # noqa: E402
from experiments.translation_spa_eng import TimeBudget  # noqa: E402

TATOEBA = os.path.join(SHARED_DATA, "spa-eng", "spa.txt.gz")
MULTI30K = os.path.join(SHARED_DATA, "multi30k", "raw")
PAIRS = ("spa-eng", "eng-spa", "en-de")
MODELS = {"rnn": CONFIGS["rnn-additive"], "transformer": CONFIGS["transformer"]}
# Epochs whose weights `averaged` takes the mean of.
AVERAGED = 2

# Variant -> (what it adds, its config changes, the Transformer's extra).
INGREDIENTS = {
    "label-smoothing": ("label smoothing 0.1", dict(label_smoothing=0.1), {}),
    "inverse-sqrt": (
        "warm-up 1,000 updates, inverse square root decay",
        dict(learning_rate_schedule="inverse_sqrt", warmup_steps=1000),
        {},
    ),
    "dropout": (
        "dropout 0.3 (attention 0.1)",
        dict(dropout=0.3),
        dict(attention_dropout=0.1),
    ),
    "tied": ("tied target embeddings", {}, dict(tie_embeddings=True)),
    "joint-vocabulary": (
        "one vocabulary of both sides",
        dict(joint_vocabulary=True),
        {},
    ),
    "averaged": (f"mean of the last {AVERAGED} epochs", {}, {}),
    "placeholders": (
        "placeholders: numbers, names, unknown words",
        dict(placeholders=("numbers", "names", "unknown")),
        {},
    ),
}
VARIANTS = ("baseline", *INGREDIENTS, "all")


def ingredients(name):
    """The ingredients variant `name` adds to the baseline: none for
    `baseline`, every one for `all`, else the `+`-joined names; a
    `ValueError` naming the first unknown or repeated one."""
    if name == "baseline":
        return []
    if name == "all":
        return list(INGREDIENTS)
    added = name.split("+")
    for index, ingredient in enumerate(added):
        if ingredient not in INGREDIENTS or ingredient in added[:index]:
            problem = "unknown" if ingredient not in INGREDIENTS else "repeated"
            raise ValueError(
                f"variant {name!r}: {problem} ingredient {ingredient!r} "
                f"(ingredients: {', '.join(INGREDIENTS)})"
            )
    return added


def variant_config(model, name):
    """The `TranslationConfig` of variant `name` for `model` (`"rnn"` or
    `"transformer"`), or `None` where the variant does not apply (one
    that names `tied`, for the RNN; its `all` goes without)."""
    added = ingredients(name)
    if "tied" in added and model != "transformer" and name != "all":
        return None
    settings = dict(BASE, **MODELS[model])
    for ingredient in added:
        _, changes, transformer_only = INGREDIENTS[ingredient]
        settings.update(changes)
        if model == "transformer":
            settings.update(transformer_only)
    return TranslationConfig(**settings)


def averages(name):
    """Whether variant `name` evaluates the mean of the last epochs."""
    return "averaged" in ingredients(name)


def load_pairs(pair):
    """`(train, validation, test)` pairs of `pair` (see the module doc)."""
    if pair == "en-de":
        return tuple(
            _multi30k(split) for split in ("train", "val", "test_2016_flickr")
        )
    columns = (1, 0) if pair == "spa-eng" else (0, 1)
    pairs = data.load_tsv_pairs(TATOEBA, *columns)
    return data.split_pairs(pairs, 0.05, 0.05, seed=0, group_by="source")


def _multi30k(split):
    texts = []
    for language in ("en", "de"):
        path = os.path.join(MULTI30K, f"{split}.{language}.gz")
        with gzip.open(path, "rt", encoding="utf-8") as file:
            texts.append([line.strip() for line in file])
    if len(texts[0]) != len(texts[1]):
        raise ValueError(
            f"{MULTI30K}: {split}.en and {split}.de differ in lines"
        )
    return [(en, de) for en, de in zip(*texts) if en and de]


def _parser():
    parser = harness.parser(
        __doc__,
        out_help="a folder for translation_recipe.json (the table) and .txt",
    )
    parser.add_argument("--pair", choices=PAIRS, default="spa-eng")
    parser.add_argument("--model", choices=list(MODELS), default="transformer")
    parser.add_argument(
        "--variants",
        nargs="+",
        type=_variant,
        default=list(VARIANTS),
        help=f"of {', '.join(VARIANTS)}, or ingredients joined by + "
        "(default: each alone, then all)",
    )
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="train at most this many epochs (equal epochs: a comparison "
        "that a busy machine cannot skew; their times are in the table)",
    )
    parser.add_argument(
        "--decoder-layers",
        type=int,
        metavar="N",
        help="the Transformer's decoder blocks (default: 2, the encoder's)",
    )
    parser.add_argument(
        "--max-length",
        type=int,
        metavar="N",
        help="pieces a sentence is read and translated to (default: "
        f"{BASE['max_length']}, for Tatoeba's short sentences)",
    )
    parser.add_argument(
        "--choose-search",
        action="store_true",
        help="pick the beam and length penalty on the validation pairs",
    )
    parser.add_argument(
        "--test",
        action="store_true",
        help="score the test split too (final configurations only)",
    )
    parser.add_argument(
        "--save",
        metavar="DIR",
        default=os.path.join("outputs", "translation_recipe"),
        help="save each trained variant in DIR/PAIR-MODEL-VARIANT "
        '("": not saved)',
    )
    return parser


def _variant(name):
    try:
        ingredients(name)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return name


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    train, validation, test = load_pairs(args.pair)
    print(
        f"{args.pair}: {len(train)} train / {len(validation)} validation / "
        f"{len(test)} test pairs"
    )
    rows = []
    for name in args.variants:
        config = configure(args, name)
        if config is None:
            print(f"{name}: not for the {args.model}")
            continue
        rows.append(_row(args, name, config, train, validation, test))
        print(pages.tables(rows), flush=True)
    return rows


def configure(args, name):
    """Variant `name`'s config with the command line's `--epochs`,
    `--decoder-layers` and `--max-length`; `None` where the variant is
    not for `args.model`."""
    config = variant_config(args.model, name)
    if config is None:
        return None
    if args.epochs:
        config = config.replace(epochs=args.epochs)
    if args.decoder_layers is not None:  # 0 or the RNN: a ValueError
        config = config.replace(decoder_layers=args.decoder_layers)
    if args.max_length is not None:
        config = config.replace(max_length=args.max_length)
    return config


def _row(args, name, config, train, validation, test):
    """Trains variant `name` for `args.minutes`, scores it."""
    keras.utils.set_random_seed(config.seed)
    translator = Translator(config)
    timer = harness.EpochTimer()
    callbacks = [TimeBudget(60 * args.minutes), timer]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        if averages(name):
            callbacks.append(
                weight_averaging.KeepEpochWeights(folder, AVERAGED)
            )
        history = translator.fit(
            train, validation, callbacks=callbacks, verbose=2
        )
        minutes = (time.perf_counter() - start) / 60
        averaged = []
        if averages(name):
            weights, averaged = weight_averaging.averaged_weights(
                folder, AVERAGED
            )
            translator.model.set_weights(weights)
    sample = validation[:MAX_PAIRS]
    row = {
        "variant": name,
        "adds": "nothing" if name == "baseline" else _adds(name),
        **_shape(config),
        "parameters": translator.model.count_params(),
        "epochs": len(history.history["loss"]),
        "train min": round(minutes, 1),
        "epoch s": [round(seconds) for seconds in timer.times],
        "averaged epochs": averaged,
    }
    scores = translator.evaluate(sample)
    row["val BLEU"] = round(scores["bleu"], 2)
    row["val chrF"] = round(scores["chrf"], 2)
    search = None
    if args.choose_search:
        search, tried = choose_search(translator, sample)
        row["search"] = f"beam {search.beam_size}, lp {search.length_penalty}"
        row["searches tried"] = tried
    if args.test:
        scores = translator.evaluate(test, search=search)
        row["test BLEU"] = round(scores["bleu"], 2)
        row["test chrF"] = round(scores["chrf"], 2)
        row["sacreBLEU"] = scores["bleu_signature"]
    if args.save:
        folder = os.path.join(args.save, _saved_name(args, config, name))
        translator.save(folder)
        print(f"saved {folder}", flush=True)
    print(f"{name}: {row}", flush=True)
    return row


def _shape(config):
    """The row's `decoder layers` and `max length`, where
    `--decoder-layers` and `--max-length` set them."""
    shape = {}
    if config.decoder_layers is not None:
        shape["decoder layers"] = config.decoder_layers
    if config.max_length != BASE["max_length"]:
        shape["max length"] = config.max_length
    return shape


def _saved_name(args, config, name):
    """`PAIR-MODEL[-K-decoder][-length-N]-VARIANT`: the saved folder
    names what `_shape` puts in the row."""
    shape = _shape(config)
    model = args.model
    if "decoder layers" in shape:
        model += f"-{shape['decoder layers']}-decoder"
    if "max length" in shape:
        model += f"-length-{shape['max length']}"
    return f"{args.pair}-{model}-{name}"


def _adds(name):
    if name == "all":
        return "all of the above"
    return ", ".join(INGREDIENTS[each][0] for each in ingredients(name))


if __name__ == "__main__":
    main()
