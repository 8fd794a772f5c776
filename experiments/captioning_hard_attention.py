"""Soft vs hard (stochastic) attention in the captioner (Xu et al. 2015).

    python -m experiments.captioning_hard_attention               # ~5 min
    python -m experiments.captioning_hard_attention --images 4000 \\
        --epochs 12 --seeds 0 1 2
    python -m experiments.captioning_hard_attention --dataset flickr8k \\
        --epochs 20 --patience 3 --seeds 0 1 2

Each seed trains the captioner once per `--modes` entry: `soft`, the
weighted mean of the grid, and `hard`, one grid cell per word sampled in
training and learned by REINFORCE with a moving-average baseline and an
entropy bonus (`attention_mode="hard"`). Everything else is the same:

- `shapes` (default): the generated images of `attention-zoo train
  captioning` with its settings (`train.SYNTHETIC_DEFAULTS`: 32 px, the
  small CNN's 8 x 8 grid, latent word prediction), `--images` of them
  (90 % train, 10 % validation) and 10 % as many test images from another
  seed, each scored against its caption and the mirrored one. Reported:
  the exact-caption rate and the attention localisation (the argmax cell
  while emitting an object's colour or shape word lies in that object's
  box; `shapes.attention_localisation`).
- `flickr8k`: the README's Flickr8k command (the frozen ImageNet
  EfficientNet-Lite0, its 7 x 7 grid, latent prediction, the doubly
  stochastic penalty 0.1 for soft attention) on the official splits of the
  images in `../shared/data/flickr8k`. Reported: BLEU-4 and CIDEr-D.

Validation and test captions use beam search (`--beam-size`); the
validation split's BLEU-4 and CIDEr-D are the ones to choose a model or a
decoding by, the test columns are reported once. Hard models are decoded
twice: reading the most likely cell (`hard`, the default) and, with the
same weights, the expectation (`hard/expectation`). The attention overlay
of the first test image is written per model to `--out` (not with
`--no-overlays`), with the table as
`captioning_hard_attention.json` (and `.txt`, all that was printed), from
which `python -m experiments.pages` makes the tables of the site's
captioning page (`docs/quality/captioning.md`).
"""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from attention_zoo_apps.captioning import data  # noqa: E402
from attention_zoo_apps.captioning import train as cli  # noqa: E402
from attention_zoo_apps.captioning.captioner import Captioner  # noqa: E402
from attention_zoo_apps.captioning.config import CaptioningConfig  # noqa: E402
from attention_zoo_apps.captioning.metrics import caption_metrics  # noqa: E402
from attention_zoo_apps.captioning.metrics import exact_match  # noqa: E402
from attention_zoo_apps.captioning.options import ATTENTION_MODES  # noqa: E402
from attention_zoo_apps.captioning.overlays import plot_tokens_over_image  # noqa: E402
from attention_zoo_apps.captioning.shapes import attention_localisation  # noqa: E402
from attention_zoo_apps.captioning.splits import synthetic_splits  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments import SHARED_DATA as SHARED  # noqa: E402

# The README's Flickr8k command.
FLICKR8K = dict(
    encoder="efficientnet_lite0",
    encoder_weights="imagenet",
    image_size=cli.LITE0_IMAGE_SIZE,
    embedding_dim=128,
    units=256,
    prediction="latent",
    attention_regularization=0.1,
)


def splits(args):
    """`(train, validation, test)` `Split`s of `--dataset`."""
    if args.dataset == "shapes":
        return synthetic_splits(
            args.images, cli.SYNTHETIC_DEFAULTS["image_size"], 0.1, 0.1
        )
    folder = os.path.join(SHARED, "flickr8k")
    return tuple(
        cli.read_split(split, FLICKR8K["image_size"])
        for split in data.flickr8k_splits(folder)
    )


def score(captioner, split, beam_size):
    """The metrics of `split` and `(tokens, heatmaps, caption)` of its
    first image."""
    hypotheses, heatmaps, tokens = captioner.caption(
        split.images, beam_size=beam_size, return_attention=True
    )
    scores = caption_metrics(hypotheses, split.captions)
    row = {
        "exact": exact_match(hypotheses, split.captions),
        "bleu_4": scores["bleu_4"],
        "cider": scores["cider"],
    }
    if split.objects is not None:  # the generated shapes' test split
        found = attention_localisation(
            heatmaps, tokens, split.objects, captioner.config.image_size
        )
        row.update(localisation=found["rate"], chance=found["chance"])
    return row, (tokens[0], heatmaps[0], hypotheses[0])


def run(mode, seed, data, args):
    """Trains one model; returns its rows (hard: argmax and expectation)."""
    train, validation, test = data
    base = (
        dict(cli.SYNTHETIC_DEFAULTS) if args.dataset == "shapes" else FLICKR8K
    )
    config = CaptioningConfig(
        **dict(base, epochs=args.epochs),
        attention_mode=mode,
        reinforce_weight=args.reinforce_weight,
        entropy_weight=args.entropy_weight,
        semi_sampling=args.semi_sampling if mode == "hard" else 0.0,
        seed=seed,
    )
    captioner = Captioner(config)
    start = time.perf_counter()
    captioner.fit(
        train.images,
        train.captions,
        validation=(validation.images, validation.captions),
        patience=args.patience,
        verbose=2,
    )
    minutes = (time.perf_counter() - start) / 60
    readings = [mode]
    if mode == "hard":
        readings.append("hard/expectation")
    rows = []
    for reading in readings:
        if reading == "hard/expectation":
            # The same weights, read as the expectation: a new compile.
            decoder = captioner.model.get_layer("decoder")
            decoder.attention_layer.inference = "expectation"
            captioner.clear_compiled()
        checked, _ = score(captioner, validation, args.beam_size)
        row, (tokens, heatmaps, caption) = score(
            captioner, test, args.beam_size
        )
        row["validation"] = checked
        path = None
        if args.overlays:
            name = reading.replace("/", "-")
            path = os.path.join(args.out, f"attention-{name}-seed{seed}.png")
            plot_tokens_over_image(
                test.images[0], tokens, heatmaps, path, caption
            )
        row.update(model=reading, seed=seed, minutes=minutes, figure=path)
        print(f"{reading} seed {seed}: {format_row(row)}", flush=True)
        rows.append(row)
    return rows


def format_row(row):
    parts = [f"exact {row['exact']:.1%}"]
    if "localisation" in row:
        parts.append(
            f"localisation {row['localisation']:.1%} "
            f"(chance {row['chance']:.1%})"
        )
    parts += [
        f"BLEU-4 {row['bleu_4']:.1f}",
        f"CIDEr-D {row['cider']:.3f}",
        f"validation BLEU-4 {row['validation']['bleu_4']:.1f}",
        f"CIDEr-D {row['validation']['cider']:.3f}",
        f"{row['minutes']:.1f} min",
    ]
    return ", ".join(parts)


def _parser():
    parser = harness.parser(
        __doc__,
        out=os.path.join("outputs", "experiments", "hard_attention"),
        out_help="folder of the attention overlays, and of "
        "captioning_hard_attention.json (the table) and .txt",
    )
    parser.add_argument(
        "--dataset", default="shapes", choices=["shapes", "flickr8k"]
    )
    parser.add_argument(
        "--images",
        type=int,
        default=1500,
        help="shapes: generated training + validation images",
    )
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument(
        "--patience",
        type=int,
        help="early stopping on the validation loss (default: none)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--modes",
        nargs="+",
        default=list(ATTENTION_MODES),
        choices=ATTENTION_MODES,
    )
    parser.add_argument(
        "--reinforce-weight",
        type=float,
        default=CaptioningConfig.reinforce_weight,
        help="hard attention's lambda_r",
    )
    parser.add_argument(
        "--entropy-weight",
        type=float,
        default=CaptioningConfig.entropy_weight,
        help="hard attention's lambda_e",
    )
    parser.add_argument(
        "--semi-sampling",
        type=float,
        default=CaptioningConfig.semi_sampling,
        help="hard attention: the probability that an image reads the "
        "expectation in a training step (the paper's 0.5)",
    )
    parser.add_argument("--beam-size", type=int, default=3)
    parser.add_argument(
        "--no-overlays",
        dest="overlays",
        action="store_false",
        help="write no attention overlays (Flickr8k's photos are for "
        "research use only: keep them out of a folder that is committed)",
    )
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    """Trains and scores every seed and mode; prints and returns the
    table's rows."""
    os.makedirs(args.out, exist_ok=True)
    data = splits(args)
    print(
        f"{args.dataset}: {len(data[0])} train / {len(data[1])} validation "
        f"/ {len(data[2])} test images",
        flush=True,
    )
    rows = []
    for seed in args.seeds:
        for mode in args.modes:
            rows += run(mode, seed, data, args)
    table = []
    for row in rows:
        located = "-"
        if "localisation" in row:
            located = f"{row['localisation']:.1%} ({row['chance']:.1%})"
        table.append(
            {
                "model": row["model"],
                "seed": row["seed"],
                "exact captions": f"{row['exact']:.1%}",
                "localisation (chance)": located,
                "BLEU-4": f"{row['bleu_4']:.1f}",
                "CIDEr-D": f"{row['cider']:.3f}",
                "validation BLEU-4": f"{row['validation']['bleu_4']:.1f}",
                "validation CIDEr-D": f"{row['validation']['cider']:.3f}",
                "train min": f"{row['minutes']:.1f}",
                "overlay": os.path.basename(row["figure"] or "-"),
            }
        )
    print(pages.tables(table))
    for row in rows:
        if row["figure"]:
            print(f"wrote {row['figure']}")
    return table


if __name__ == "__main__":
    main()
