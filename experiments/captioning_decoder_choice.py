"""Captioning on the generated shapes: the decoders compared on validation.

    python -m experiments.captioning_decoder_choice
    python -m experiments.captioning_decoder_choice --variants deep latent \\
        --seeds 0

How the shapes' decoder was chosen, on data the test split never sees.
Each variant (`VARIANTS`) is `train.SYNTHETIC_DEFAULTS` with one change,
trained on the generated images of seed 0 (3,600 train, 400 validation;
early stopping on the validation loss, `--patience` epochs, the best
epoch's weights kept; at most the defaults' 12 epochs), then captioned
once with beam 3 on a choice set: 400 images of a third seed (2; the test
images of `captioning_quality` are seed 1's), each with its caption and
the mirrored one as references. Reports exact match, localisation (the
argmax cell of a colour or shape word inside its object's box;
`synthetic.attention_localisation`) and localisation by word: the colour
and shape words of the object named first and of the one named second.
The variants of several seeds train once per seed (another
initialisation and order of the examples; the images stay the same).

Prints a Markdown table; with `--out DIR` it also writes it as
`DIR/captioning_decoder_choice.json`, from which `python -m
experiments.pages` makes the table of the site's captioning page
(`docs/quality/captioning.md`).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from attention_zoo_apps.captioning import train as cli  # noqa: E402
from attention_zoo_apps.captioning.captioner import Captioner  # noqa: E402
from attention_zoo_apps.captioning.config import CaptioningConfig  # noqa: E402
from attention_zoo_apps.captioning.splits import scored_split  # noqa: E402
from attention_zoo_apps.captioning.splits import synthetic_splits  # noqa: E402
from attention_zoo_apps.captioning.synthetic import attention_localisation  # noqa: E402
from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks import pages  # noqa: E402
from experiments.captioning_quality import fit_early_stopped  # noqa: E402

IMAGES = 4000  # generated with seed 0: 3,600 train, 400 validation
CHOICE_IMAGES = 400
CHOICE_SEED = 2
DEEP = {"prediction": "deep"}


def _deep(change, seeds=(0,), images=IMAGES, **settings):
    """A variant of the paper's deep output: `(what the table calls it,
    the change to the defaults, its seeds, the images generated for
    training and validation)`."""
    return (f"deep output, {change}", dict(DEEP, **settings), seeds, images)


VARIANTS = {
    "latent": ("latent prediction (the defaults)", {}, (0, 1, 2), IMAGES),
    "deep": ("deep output (the paper's)", DEEP, (0, 1, 2), IMAGES),
    "deep-dropout": _deep("dropout 0.3", dropout=0.3),
    "deep-general": _deep("general attention", attention="general"),
    "deep-penalty-0.01": _deep(
        "doubly stochastic penalty 0.01", attention_regularization=0.01
    ),
    "deep-penalty-0.1": _deep(
        "doubly stochastic penalty 0.1", attention_regularization=0.1
    ),
    "deep-units-64": _deep("LSTM 64 units", units=64),
    "deep-units-256": _deep("LSTM 256 units", units=256),
    "deep-3x-images": _deep("3x the images", images=3 * IMAGES),
    "deep-state-and-word": _deep(
        "query state and word",
        seeds=(0, 1, 2),
        attention_query="state_and_word",
    ),
    "deep-state-and-word-lr": _deep(
        "query state and word, learning rate 1e-3",
        seeds=(0, 1),
        attention_query="state_and_word",
        learning_rate=1e-3,
    ),
}


def _parser():
    parser = harness.parser(
        __doc__,
        out_help="a folder for captioning_decoder_choice.json (the table) "
        "and .txt",
    )
    parser.add_argument(
        "--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS)
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="train each variant once per seed given (default: the "
        "variant's own seeds)",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=cli.SYNTHETIC_DEFAULTS["epochs"],
        help="at most this many epochs (default: the shapes' default)",
    )
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument(
        "--images",
        type=int,
        default=IMAGES,
        help="generated images for training and validation; a variant "
        "of 3x the images takes 3x this",
    )
    parser.add_argument(
        "--choice-images",
        type=int,
        default=CHOICE_IMAGES,
        help="images of the choice set (seed 2)",
    )
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), _measure, argv)


def _measure(args):
    """A row per variant and seed; prints them as a table."""
    image_size = cli.SYNTHETIC_DEFAULTS["image_size"]
    choice = scored_split(
        make_synthetic_shapes(args.choice_images, image_size, seed=CHOICE_SEED)
    )
    rows = []
    generated = {}  # image count -> (train, validation), made once
    for name in args.variants:
        description, change, seeds, images = VARIANTS[name]
        count = images * args.images // IMAGES
        if count not in generated:
            generated[count] = synthetic_splits(
                count, image_size, 0.1, 0.1, seed=0
            )[:2]
        train, validation = generated[count]
        for seed in args.seeds or seeds:
            row = _train_and_score(
                description, change, seed, train, validation, choice, args
            )
            print(pages.tables([row]), flush=True)
            rows.append(row)
    print(pages.tables(rows))
    return rows


def _train_and_score(
    description, change, seed, train, validation, choice, args
):
    """Trains one decoder, captions the choice set; its table row."""
    settings = dict(cli.SYNTHETIC_DEFAULTS, epochs=args.epochs)
    settings.update(change)
    captioner = Captioner(CaptioningConfig(**settings, seed=seed))
    minutes, losses = fit_early_stopped(
        captioner, train, validation, args.patience
    )
    hypotheses, heatmaps, tokens = captioner.caption(
        choice.images, beam_size=3, return_attention=True
    )
    found = attention_localisation(
        heatmaps, tokens, choice.objects, captioner.config.image_size
    )
    by_word = found["by_word"]

    def pair(order):
        return " / ".join(
            "-"
            if by_word[f"{order} {kind}"] is None
            else f"{by_word[f'{order} {kind}']:.0%}"
            for kind in ("colour", "shape")
        )

    return {
        "decoder": description,
        "seed": seed,
        "train images": len(train),
        "best epoch / run": f"{losses.index(min(losses)) + 1} / {len(losses)}",
        "train min": f"{minutes:.1f}",
        "exact (val)": f"{cli.exact_match(hypotheses, choice.captions):.1%}",
        "localisation (val)": f"{found['rate']:.1%}",
        "1st object colour / shape": pair("1st"),
        "2nd object colour / shape": pair("2nd"),
    }


if __name__ == "__main__":
    main()
