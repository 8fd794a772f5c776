"""`attention-zoo predict DIR --premise ... --hypothesis ...`: run an
exported entailment classifier.

DIR is a version folder (`saved_models/entailment/3`) or the folder that
holds the versions (the highest is used). Only TensorFlow and TensorFlow
Text are needed, as in TF Serving. Several `--premise` / `--hypothesis`
pairs may be given; `--plot PNG` draws the first pair's alignment.
"""

import sys

from applications.common import serving
from attention_zoo.export import load_signature


def main(argv=None):
    parser = serving.export_parser(
        "attention-zoo predict",
        "Classify premise / hypothesis pairs with an exported entailment "
        "SavedModel.",
    )
    parser.add_argument("--premise", action="append", required=True)
    parser.add_argument("--hypothesis", action="append", required=True)
    parser.add_argument("--plot", metavar="PNG", help="alignment heatmap")
    args = parser.parse_args(argv)
    if len(args.premise) != len(args.hypothesis):
        parser.error(
            f"got {len(args.premise)} --premise and {len(args.hypothesis)} "
            "--hypothesis: give them in pairs"
        )
    path = serving.export_version(parser, args.directory)
    import tensorflow as tf

    serve = load_signature(path)
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
        args.plot,
        title=f"{args.premise[0]} / {args.hypothesis[0]}: {label}",
        x_label="hypothesis token",
        y_label="premise token",
    )
    print(f"wrote {path}")
