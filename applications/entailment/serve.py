"""`attention-zoo predict MODEL --premise ... --hypothesis ...`: run an
entailment export.

MODEL is a shipped model's name (`entailment-snli`, see `attention-zoo
models`), a version folder (`saved_models/entailment/3`) or the folder
that holds the versions (the highest is used). Only TensorFlow and TensorFlow
Text are needed, as in TF Serving. Several `--premise` / `--hypothesis`
pairs may be given; `--plot PNG` draws the first pair's alignment. Another
application's export, a folder without one and an empty sentence are
refused with one line naming them (exit code 2).
"""

import os
import sys

from applications.common import serving

PROG = "attention-zoo predict"


def build_parser():
    """The command's argument parser."""
    parser = serving.export_parser(
        PROG,
        "Classify premise / hypothesis pairs with an entailment export "
        "(`attention-zoo train entailment --export DIR`). One line per "
        "pair: premise<TAB>hypothesis<TAB>label<TAB>probabilities.",
        [
            f'{PROG} entailment-snli --premise "A man plays a guitar." '
            '--hypothesis "A man is making music."',
            f'{PROG} saved_models/entailment --premise "a man is playing a '
            'guitar" --hypothesis "a person plays music"',
        ],
    )
    parser.add_argument(
        "--premise",
        action="append",
        required=True,
        help="a premise sentence (repeat with --hypothesis for more pairs)",
    )
    parser.add_argument(
        "--hypothesis",
        action="append",
        required=True,
        help="the hypothesis to classify against the premise of its pair",
    )
    parser.add_argument("--plot", metavar="PNG", help="alignment heatmap")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if len(args.premise) != len(args.hypothesis):
        parser.error(
            f"got {len(args.premise)} --premise and {len(args.hypothesis)} "
            "--hypothesis: give them in pairs"
        )
    for flag in ("premise", "hypothesis"):
        for index, text in enumerate(getattr(args, flag), 1):
            if not text.strip():
                serving.fail(parser, f"--{flag} {index} is empty: {text!r}")
    serve = serving.load_export(parser, args.directory, "entailment")
    import tensorflow as tf

    outputs = serve(
        premise=tf.constant(args.premise),
        hypothesis=tf.constant(args.hypothesis),
    )
    labels = [label.decode() for label in outputs["label"].numpy()]
    probabilities = outputs["probabilities"].numpy()
    for premise, hypothesis, label, row in zip(
        args.premise, args.hypothesis, labels, probabilities
    ):
        shares = " ".join(f"{p:.3f}" for p in row)
        print(f"{premise}\t{hypothesis}\t{label}\t{shares}")
    if args.plot:
        _plot(args, outputs["alignment"].numpy()[0], labels[0])
    sys.stdout.flush()
    return 0


def _plot(args, alignment, label):
    """The first pair's alignment over its words (tokens as the export's
    WordPiece pieces are not returned, rows and columns are cut to the
    non-zero block)."""
    import numpy as np

    from applications.common.plots import plot_heatmap

    rows = int(np.sum(alignment.sum(-1) > 0))
    columns = int(np.sum(alignment.sum(0) > 0))
    weights = alignment[:rows, :columns]
    path = plot_heatmap(
        [str(j) for j in range(columns)],
        [str(i) for i in range(rows)],
        weights,
        # matplotlib adds `.png` to a path without an extension.
        args.plot if os.path.splitext(args.plot)[1] else f"{args.plot}.png",
        title=f"{args.premise[0]} / {args.hypothesis[0]}: {label}",
        x_label="hypothesis token",
        y_label="premise token",
    )
    print(f"wrote {path}")
