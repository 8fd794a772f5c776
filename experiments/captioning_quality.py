"""Captioning quality: show-attend-tell vs the mean-feature baseline.

    python -m experiments.captioning_quality --datasets shapes
    python -m experiments.captioning_quality --datasets flickr8k --epochs 30
    python -m experiments.captioning_quality --datasets flickr8k \\
        --encoder efficientnet_lite0 --encoder-weights imagenet --seeds 0 1 2

Datasets:

- `shapes`: the generated images of `attention-zoo train captioning`
  (`train.SYNTHETIC_DEFAULTS`, 4,000 images: 3,600 train / 400 validation,
  400 test images from another seed, each scored against its caption and the
  mirrored one). Reports exact-match accuracy and attention localisation (the
  argmax cell while emitting an object's colour or shape word lies inside
  that object's box).
- `flickr8k`: the official Flickr8k train / dev / test lists, restricted to the
  images present in `../shared/data/flickr8k/images_256px` (the first 1,000
  of the data set: 753 train, 113 dev, 125 test images, 5 captions each).

Both models are `build_captioner` with the same encoder, sizes and training;
`baseline` has no attention (the LSTM sees the mean feature vector at every
step). Training stops when the validation loss has not improved for
`--patience` epochs and keeps the best epoch's weights (the only choice made
on data, made on validation); each model is then evaluated once on test with
beam search (beam 3): corpus BLEU-1..4 and CIDEr-D. BLEU-4 and CIDEr-D on
the validation split are printed as well. With several `--seeds`, each
seed trains both models (another initialisation and order of the
examples; the splits stay the same) and the mean over seeds is printed.

With a pretrained `--encoder-weights` the encoder is frozen and each
image's features are computed once (`Captioner.caches_features`): the
training time is the decoder's, plus one pass of the encoder per image.

Prints Markdown tables; with `--out DIR` it also writes them as
`DIR/captioning_quality.json`, from which `python -m experiments.pages`
makes the tables of the site's captioning page
(`docs/quality/captioning.md`).
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from attention_zoo_apps.captioning import data  # noqa: E402
from attention_zoo_apps.captioning import train as cli  # noqa: E402
from attention_zoo_apps.captioning.bootstrap import paired_bootstrap  # noqa: E402
from attention_zoo_apps.captioning.captioner import Captioner  # noqa: E402
from attention_zoo_apps.captioning.config import CaptioningConfig  # noqa: E402
from attention_zoo_apps.captioning.metrics import caption_metrics  # noqa: E402
from attention_zoo_apps.captioning.model import EFFICIENTNET_LITE0  # noqa: E402
from attention_zoo_apps.captioning.options import PREDICTIONS  # noqa: E402
from attention_zoo_apps.captioning.shapes import attention_localisation  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA as SHARED  # noqa: E402


def load(dataset, image_size, seed):
    """`(train, validation, test)` `cli.Split`s."""
    if dataset == "shapes":
        args = argparse.Namespace(
            synthetic_images=4000,
            validation_fraction=0.1,
            test_fraction=0.1,
            seed=seed,
        )
        return cli.synthetic_splits(args, image_size)
    splits = data.flickr8k_splits(os.path.join(SHARED, "flickr8k"))
    return tuple(cli.read_split(split, image_size) for split in splits)


def _parser():
    parser = harness.parser(
        __doc__,
        out_help="a folder for captioning_quality.json (the tables) and .txt",
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["shapes", "flickr8k"],
        choices=["shapes", "flickr8k"],
    )
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument(
        "--image-size",
        type=int,
        help="default: 224 with efficientnet_lite0, else 128",
    )
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--attention-regularization", type=float, default=1.0)
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0],
        help="one training of each model per seed",
    )
    parser.add_argument(
        "--encoder",
        default="small_cnn",
        help="Flickr8k's encoder: 'small_cnn' (from scratch) or "
        "'efficientnet_lite0'",
    )
    parser.add_argument(
        "--encoder-weights",
        help="'imagenet' or a weights file (frozen); default: random",
    )
    parser.add_argument(
        "--encoder-stage",
        type=int,
        help="efficientnet_lite0's stage for the grid (default: the head)",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="resamples for the paired bootstrap of the two models' difference",
    )
    parser.add_argument(
        "--augment",
        action="store_true",
        help="random crops and mirror images of the training photographs",
    )
    parser.add_argument(
        "--prediction",
        choices=PREDICTIONS,
        help="the attention model's word prediction (default: the "
        "dataset's defaults, 'latent' for the shapes and 'deep' for "
        "Flickr8k; the baseline has no attention, so it always uses 'deep')",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        default=["attention", "baseline"],
        choices=["attention", "baseline"],
    )
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    """`{"test": rows}`, a row per model and seed; with several seeds
    also `"mean over seeds"`, and with both models `"attention minus
    baseline"` (paired bootstrap intervals). Prints them."""
    runs = []  # (row, outputs) of each model and seed
    captions = {}  # (dataset, model, seed) -> split -> (hypotheses, refs)
    for dataset in args.datasets:
        if dataset == "shapes":
            base = dict(cli.SYNTHETIC_DEFAULTS, epochs=args.epochs)
        else:
            lite0 = args.encoder == EFFICIENTNET_LITE0
            base = dict(
                encoder=args.encoder,
                encoder_weights=args.encoder_weights,
                encoder_stage=args.encoder_stage,
                image_size=args.image_size
                or (cli.LITE0_IMAGE_SIZE if lite0 else 128),
                units=args.units,
                embedding_dim=args.embedding_dim,
                dropout=args.dropout,
                attention_regularization=args.attention_regularization,
                augment=args.augment,
                epochs=args.epochs,
            )
        # The same splits for every seed.
        train, validation, test = load(
            dataset, base["image_size"], args.seeds[0]
        )
        print(
            f"{dataset}: {len(train)} train / {len(validation)} validation / "
            f"{len(test)} test images",
            flush=True,
        )
        for seed in args.seeds:
            for name in args.models:
                row, outputs = train_and_score(
                    dataset, name, base, seed, (train, validation, test), args
                )
                runs.append((row, outputs))
                captions[dataset, name, seed] = outputs
    result = {"test": [row for row, _ in runs]}
    if len(args.seeds) > 1:
        result["mean over seeds"] = seed_means(runs)
    differences = []
    for dataset in args.datasets:
        for seed in args.seeds:
            pair = [
                captions.get((dataset, m, seed))
                for m in ("attention", "baseline")
            ]
            if None not in pair:
                differences += attention_minus_baseline(
                    dataset, seed, *pair, args.bootstrap
                )
    if differences:
        result["attention minus baseline"] = differences
    print(pages.tables(result))
    return result


def train_and_score(dataset, name, base, seed, splits, args):
    """Trains model `name` ("attention" or "baseline") with early
    stopping, captions validation and test with beam 3. Returns the
    table row and `{split: (hypotheses, references)}`."""
    train, validation, test = splits
    attention = "additive" if name == "attention" else None
    prediction = args.prediction or base.get("prediction", "deep")
    config = CaptioningConfig(
        **dict(base, prediction=prediction if attention else "deep"),
        attention=attention,
        seed=seed,
    )
    captioner = Captioner(config)
    minutes, losses = fit_early_stopped(
        captioner, train, validation, args.patience
    )
    best = losses.index(min(losses)) + 1
    # Validation scores too: a choice between models can be read from
    # these without the test split.
    checked_hypotheses = captioner.caption(validation.images, beam_size=3)
    checked = caption_metrics(checked_hypotheses, validation.captions)
    hypotheses, heatmaps, tokens = captioner.caption(
        test.images, beam_size=3, return_attention=True
    )
    scores = caption_metrics(hypotheses, test.captions)
    exact = cli.exact_match(hypotheses, test.captions)
    located = float("nan")
    if dataset == "shapes" and attention is not None:
        located = attention_localisation(
            heatmaps, tokens, test.objects, config.image_size
        )["rate"]
    print(
        f"{dataset} {name} seed {seed}: BLEU-4 {scores['bleu_4']:.1f} CIDEr "
        f"{scores['cider']:.3f} (validation {checked['bleu_4']:.1f} / "
        f"{checked['cider']:.3f}) exact {exact:.1%} ({minutes:.1f} min)",
        flush=True,
    )
    for hypothesis, refs in list(zip(hypotheses, test.captions))[:3]:
        print(f"  {hypothesis}\n    (reference: {refs[0]})")
    row = {
        "data": dataset,
        "model": (
            f"attention, {config.prediction} prediction"
            if attention
            else "mean feature, no attention"
        ),
        "seed": seed,
        "parameters": captioner.model.count_params(),
        "best epoch / run": f"{best} / {len(losses)}",
        "train min": f"{minutes:.1f}",
        **{f"BLEU-{n}": f"{scores[f'bleu_{n}']:.1f}" for n in range(1, 5)},
        "CIDEr-D": f"{scores['cider']:.3f}",
        "exact": f"{exact:.1%}",
        "localisation": "-" if np.isnan(located) else f"{located:.1%}",
        "validation BLEU-4": f"{checked['bleu_4']:.1f}",
        "validation CIDEr-D": f"{checked['cider']:.3f}",
    }
    outputs = {
        "validation": (checked_hypotheses, validation.captions),
        "test": (hypotheses, test.captions),
        # The unrounded figures, for the means over seeds.
        "scores": {"test": scores, "validation": checked},
        "minutes": minutes,
    }
    return row, outputs


def fit_early_stopped(captioner, train, validation, patience):
    """Trains `captioner` on the `Split` `train` until the loss on
    `validation` has not improved for `patience` epochs, and keeps the
    best epoch's weights (the bundle's own early stopping, as `train
    captioning --patience`). Returns the minutes and the validation
    losses per epoch."""
    start = time.perf_counter()
    history = captioner.fit(
        train.images,
        train.captions,
        validation=(validation.images, validation.captions),
        patience=patience,
        verbose=2,
    )
    return (time.perf_counter() - start) / 60, history.history["val_loss"]


def seed_means(runs):
    """A row per data set and model: the mean (min-max) over seeds of
    BLEU-4 and CIDEr-D, on test and validation, and of the minutes, from
    the unrounded figures of `runs` (`train_and_score`'s `(row,
    outputs)`)."""
    groups = {}
    for row, outputs in runs:
        groups.setdefault((row["data"], row["model"]), []).append(outputs)
    means = []
    for (data_name, name), group in groups.items():
        mean = {"data": data_name, "model": name, "seeds": len(group)}
        for split in ("test", "validation"):
            for metric, key, digits in (
                ("BLEU-4", "bleu_4", 1),
                ("CIDEr-D", "cider", 3),
            ):
                values = [run["scores"][split][key] for run in group]
                mean[f"{split} {metric} mean (min-max)"] = (
                    f"{np.mean(values):.{digits}f} ({min(values):.{digits}f}"
                    f"-{max(values):.{digits}f})"
                )
        minutes = np.mean([run["minutes"] for run in group])
        mean["train min (mean)"] = f"{minutes:.1f}"
        means.append(mean)
    return means


def attention_minus_baseline(dataset, seed, attention, baseline, samples):
    """A row per split: attention's BLEU-4 and CIDEr-D minus the
    baseline's on the same images, with 95 % paired bootstrap intervals
    over `samples` resamples of the images."""
    rows = []
    for split in ("validation", "test"):
        hypotheses, references = attention[split]
        observed, low, high = paired_bootstrap(
            hypotheses, baseline[split][0], references, samples
        )
        rows.append(
            {
                "data": dataset,
                "seed": seed,
                "split": split,
                "BLEU-4 [95% CI]": f"{observed[0]:+.1f} "
                f"[{low[0]:+.1f}, {high[0]:+.1f}]",
                "CIDEr-D [95% CI]": f"{observed[1]:+.3f} "
                f"[{low[1]:+.3f}, {high[1]:+.3f}]",
                "resamples": samples,
            }
        )
    return rows


if __name__ == "__main__":
    main()
