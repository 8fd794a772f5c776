"""`attention-zoo train captioning`: data -> training -> metrics -> export.

    attention-zoo train captioning                       # generated shapes
    attention-zoo train captioning --data ../shared/data/flickr8k \\
        --image-size 128 --epochs 20 --export saved_models/captioning
    attention-zoo train captioning --data ../shared/data/flickr8k \\
        --encoder efficientnet_lite0 --encoder-weights imagenet --patience 3
    attention-zoo train captioning --format coco \\
        --data ../shared/data/coco-mini/annotations/captions_val2017.json

Progress bars per epoch and a checkpoint per epoch in `--run-dir`; a run
that is interrupted and restarted with the same command resumes from its
last finished epoch. After training: BLEU-1..4, CIDEr-D and the exact-match
rate on the held-out test images, example captions, the attention overlay
of a test image (`attention.png`), on the generated shapes how often the
attention looks inside the object a word names, and the export.

`--data` takes the COCO layout (a captions JSON, or a folder holding
`annotations/captions_<split>.json` and the image folder `<split>/`) or the
Flickr8k layout (the folder with `text/Flickr8k.token.txt[.gz]`, whose
official train / dev / test lists are used when present, and
`images_256px/` or `Flicker8k_Dataset/`; or the token file itself);
`--images DIR` names the image folder where it is elsewhere (`layout.py`
finds the files, `splits.py` reads them). Images the annotations name but
the folder lacks, and files that do not decode, are reported and skipped.
"""

import os

from attention_zoo_apps.captioning import data
from attention_zoo_apps.captioning import flags
from attention_zoo_apps.captioning import splits
from attention_zoo_apps.captioning.captioner import Captioner
from attention_zoo_apps.captioning.config import CaptioningConfig
from attention_zoo_apps.captioning.metrics import caption_metrics
from attention_zoo_apps.captioning.metrics import exact_match
from attention_zoo_apps.captioning.model import EFFICIENTNET_LITE0
from attention_zoo_apps.captioning.overlays import plot_tokens_over_image
from attention_zoo_apps.captioning.splits import Split  # noqa: F401  (train.Split)
from attention_zoo_apps.captioning.synthetic import attention_localisation
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.commands import train_steps

# A model that learns the generated shapes in about two minutes on 2
# cores: 32 px images (an 8 x 8 feature map) and no doubly stochastic
# penalty, which asks each of the 64 cells for a word's worth of attention
# that a 7-word caption cannot give and so spreads the attention out (at
# 0.1 the localisation fell from 70 % to 45 % and exact matches from 93 %
# to 50 %).
# EfficientNet-Lite0's ImageNet size: a 7 x 7 grid from its head.
LITE0_IMAGE_SIZE = 224
SYNTHETIC_DEFAULTS = dict(
    image_size=32,
    # Words predicted from the positions looked at: the heatmaps point at
    # the object each word names (docs/quality/captioning.md: localisation
    # 85-91 % against 67-75 % with the paper's deep output, on validation).
    prediction="latent",
    embedding_dim=64,
    units=128,
    vocabulary_size=200,
    max_length=10,
    dropout=0.0,
    attention_regularization=0.0,
    learning_rate=3e-3,
    epochs=12,
)


def _config(args, synthetic):
    values = train_flags.config_values(
        args,
        SYNTHETIC_DEFAULTS if synthetic else {},
        (
            "encoder",
            "encoder_stage",
            "attention_regularization",
            "attention_query",
            "prediction",
            "attention_mode",
            "hard_inference",
            "reinforce_weight",
            "entropy_weight",
            "semi_sampling",
            "image_size",
            "embedding_dim",
            "units",
            "vocabulary_size",
            "max_length",
            "dropout",
        ),
        attention=None if args.no_attention else args.attention,
        trainable_encoder=_trainable_encoder(args),
        encoder_weights=args.encoder_weights,
    )
    if values.get("encoder") == EFFICIENTNET_LITE0 and args.image_size is None:
        values["image_size"] = LITE0_IMAGE_SIZE
    if args.augment:
        if synthetic:
            raise ValueError(
                "--augment mirrors the training images, and the generated "
                "shapes' captions say 'left of' and 'right of': give it "
                "with --data (photographs) only."
            )
        values["augment"] = True
    if values["attention"] is None and args.prediction is None:
        values["prediction"] = "deep"  # the baseline has nothing to mix
    return CaptioningConfig(**values)


def _trainable_encoder(args):
    """`--fine-tune-encoder`: True, `--freeze-encoder`: False, neither:
    None (frozen when pretrained)."""
    if args.fine_tune_encoder:
        return True
    if args.freeze_encoder:
        return False
    return None


def synthetic_splits(args, image_size):
    """`(train, validation, test)` `Split`s of generated shapes, as the
    flags `--synthetic-images`, `--validation-fraction`, `--test-fraction`
    and `--seed` ask (see `splits.synthetic_splits`)."""
    return splits.synthetic_splits(
        args.synthetic_images,
        image_size,
        args.validation_fraction,
        args.test_fraction,
        seed=args.seed,
    )


def captioned_splits(args, layout):
    """`(train, validation, test)` `CaptionedImages` of `--data`, whose
    files `layout` names; reports the images the folder lacks."""
    if layout.split_files is not None:
        print(
            f"Flickr8k official splits from {os.path.dirname(layout.captions)}"
        )
    captioned, missing = splits.load_splits(
        layout,
        args.max_images,
        args.validation_fraction,
        args.test_fraction,
        seed=args.seed,
    )
    if missing:
        print(
            f"skipped {missing} images the annotations name but "
            f"{layout.image_dir} lacks"
        )
    return captioned


def read_split(captioned, image_size):
    """The `Split` of the images of a `CaptionedImages` that decode; the
    others are reported (the first five by name) and left out."""
    split, bad = splits.read_split(captioned, image_size)
    for path, reason in list(bad.items())[:5]:
        print(f"skipped {path}: {reason}")
    if len(bad) > 5:
        print(f"skipped {len(bad) - 5} more unreadable images")
    return split


def check_splits(args, layout, train, validation, test):
    """A `UsageError` unless every split the run uses holds a readable
    image (see `train_flags.check_splits`); `layout` is None for the
    generated shapes."""
    fractions = {
        "validation": ("--validation-fraction", args.validation_fraction)
    }
    hint = "images that do not decode are left out"
    if layout is None:
        source, hint = "the generated shapes", "raise --synthetic-images"
    elif layout.split_files is not None:
        source, fractions = layout.captions, {}
        hint = "the official lists name the splits; raise --max-images"
    else:
        source = args.data
        fractions["test"] = ("--test-fraction", args.test_fraction)
    train_flags.check_splits(
        source,
        "images",
        train_flags.split_counts(
            train,
            validation,
            test,
            layout is not None
            and layout.split_files is not None
            or args.validation_fraction > 0,
        ),
        fractions,
        hint,
    )


def _overlay(split, index, words, heatmaps, caption, path):
    """The attention figure of `split`'s image `index` (drawn over the
    original file at its own resolution when there is one)."""
    image = split.images[index]
    if split.paths is not None:
        with open(split.paths[index], "rb") as f:
            image = f.read()
    return plot_tokens_over_image(image, words, heatmaps, path, caption)


def main(argv=None):
    parser = flags.train_parser()
    with train_flags.usage_errors(parser):
        args, strategy = train_steps.parse_flags(parser, argv)
        synthetic = not args.data
        _config(args, synthetic)  # a bad value, before the run folder
        captioner = train_steps.start_run(
            Captioner,
            args,
            strategy,
            lambda: Captioner(_config(args, synthetic), strategy=strategy),
            config=lambda: _config(args, synthetic),
        )
        config = captioner.config
        if synthetic:
            layout = None
            train, validation, test = synthetic_splits(args, config.image_size)
        else:
            layout = data.find_layout(args.data, args.format, args.images)
            train, validation, test = (
                read_split(split, config.image_size)
                for split in captioned_splits(args, layout)
            )
        print(
            f"{len(train)} train, {len(validation)} validation, {len(test)} "
            f"test images ({sum(map(len, train.captions))} training captions)"
        )
        check_splits(args, layout, train, validation, test)
    run_dir = args.run_dir
    chief = train_steps.fit_run(
        captioner,
        args,
        strategy,
        train.images,
        train.captions,
        validation=(validation.images, validation.captions)
        if len(validation)
        else None,
        watched=(validation.images, validation.captions),
    )
    if not chief:
        return 0  # the chief evaluates, draws and exports
    print(f"parameters: {captioner.model.count_params():,}")

    search = train_steps.flag_search(args)
    hypotheses, heatmaps, tokens = captioner.caption(
        test.images, search=search, return_attention=True
    )
    scores = caption_metrics(hypotheses, test.captions)
    bleu = "  ".join(f"BLEU-{n} {scores[f'bleu_{n}']:.1f}" for n in range(1, 5))
    print(
        f"test {bleu}  CIDEr {scores['cider']:.3f}  exact match "
        f"{exact_match(hypotheses, test.captions):.1%} ({len(test)} images, "
        f"beam {args.beam_size})"
    )
    train_flags.note_few_examples("test", len(test), "images")
    for hypothesis, references in list(zip(hypotheses, test.captions))[:5]:
        print(f"  {hypothesis}\n    (reference: {references[0]})")
    localisation = {}  # the metrics' share of the localisation check
    if config.attention is not None:
        if synthetic:
            found = attention_localisation(
                heatmaps, tokens, test.objects, config.image_size
            )
            print(
                f"attention localisation: {found['rate']:.1%} of "
                f"{found['words']} colour and shape words looked inside "
                f"their object's box (chance {found['chance']:.1%})"
            )
            localisation = {
                "attention_localisation": found["rate"],
                "localisation_chance": found["chance"],
                "localised_words": found["words"],
            }
        path = _overlay(
            test,
            0,
            tokens[0],
            heatmaps[0],
            hypotheses[0],
            os.path.join(run_dir, "attention.png"),
        )
        print(f"wrote {path}")
    if args.export:
        metrics = dict(
            scores,
            exact_match=exact_match(hypotheses, test.captions),
            images=len(test),
            beam_size=args.beam_size,
            **localisation,
        )
        train_steps.export_next_version(
            captioner,
            args,
            metrics,
            zip(train.images, train.captions),
            search=search,
            fold_batch_norms=args.export_fold_batch_norms,
        )
    train_steps.print_logs_line(args)
    return 0
