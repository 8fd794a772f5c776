"""`attention-zoo predict MODEL --premise ... --hypothesis ...`: run an
entailment export.

MODEL is a shipped model's name (`entailment-snli`, see `attention-zoo
models`), a version folder (`saved_models/entailment/3`) or the folder
that holds the versions (the highest is used). Only TensorFlow and TensorFlow
Text are needed, as in TF Serving. Several `--premise` / `--hypothesis`
pairs may be given; `--plot PNG` draws the first pair's alignment. Each
pair's line gives the label and every class's probability, by name:
`premise<TAB>hypothesis<TAB>entailment (entailment 0.611, neutral 0.314,
contradiction 0.075)`. A sentence longer than the model reads (the model
card's input limits) is cut, and said so on stderr. Another application's
export, a folder without one and an empty sentence (no words, as the export
itself refuses it) are refused with one line naming them (exit code 2).
"""

import os
import re
import sys

import numpy as np
import tensorflow as tf

from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import infer_steps
from attention_zoo_apps.common.flag_checks import UsageError
from attention_zoo_apps.common.plots import plot_heatmap
from attention_zoo_apps.entailment import flags
from attention_zoo_apps.entailment.examples import LABELS

PROG = flags.INFER_PROG


def main(argv=None):
    parser = flags.infer_parser()
    args = parser.parse_args(argv)
    with infer_flags.refusals(parser):
        if len(args.premise) != len(args.hypothesis):
            parser.error(
                f"got {len(args.premise)} --premise and {len(args.hypothesis)} "
                "--hypothesis: give them in pairs"
            )
        for flag in ("premise", "hypothesis"):
            for index, text in enumerate(getattr(args, flag), 1):
                # Surely no words; the export refuses the other texts without
                # any (e.g. only non-breaking spaces), answered below.
                if _BLANK.fullmatch(text):
                    raise UsageError(f"--{flag} {index} is empty: {text!r}")
        serve = infer_steps.load_export(args.directory, "entailment")

        try:
            outputs = serve(
                premise=tf.constant(args.premise),
                hypothesis=tf.constant(args.hypothesis),
            )
        except tf.errors.InvalidArgumentError as error:
            raise UsageError(_refusal(error.message))
        labels = [label.decode() for label in outputs["label"].numpy()]
        probabilities = outputs["probabilities"].numpy()
        for premise, hypothesis, label, row in zip(
            args.premise, args.hypothesis, labels, probabilities
        ):
            print(f"{premise}\t{hypothesis}\t{label} ({class_shares(row)})")
        infer_flags.warn_truncated(
            PROG,
            [f"pair {row + 1}" for row in infer_steps.truncated_rows(outputs)],
            _cut(infer_steps.input_limits(args.directory)),
        )
        if args.plot:
            _plot(args, outputs["alignment"].numpy()[0], labels[0])
        sys.stdout.flush()
        return 0


# What the tokenizer surely reads as no words: RE2's `\s`, its separator.
_BLANK = re.compile(r"[\t\n\f\r ]*")
_FAILED = "assertion failed:"
# The export's refusal: the input's name and the batch positions.
_EMPTY = re.compile(
    r"`(premise|hypothesis)` must not be empty.*?\] \[([\d ]+)\]"
)


def class_shares(probabilities):
    """`entailment 0.611, neutral 0.314, contradiction 0.075`: each
    class's probability beside its name (columns in `LABELS` order)."""
    return ", ".join(
        f"{name} {p:.3f}" for name, p in zip(LABELS, probabilities)
    )


def _refusal(message):
    """The export's refusal of a sentence as one line naming its flags
    (`--premise 2`), or what its assertion says."""
    found = _EMPTY.search(message)
    if found is None:
        said = [line for line in message.splitlines() if _FAILED in line]
        line = said[0] if said else message.strip().splitlines()[0]
        return line.split(_FAILED, 1)[-1].strip()
    name = found.group(1)
    flags = ", ".join(f"--{name} {int(p) + 1}" for p in found.group(2).split())
    return f"{flags}: no words (empty or whitespace only)"


def _cut(limits):
    """What the warning says of a cut pair, with the export's limit."""
    read = "its first tokens"
    if "premise_tokens" in limits:
        read = f"its first {limits['premise_tokens']} tokens"
    return (
        "the premise or the hypothesis is longer than the model reads: "
        f"it was cut to {read} (the model card's input limits)"
    )


def _plot(args, alignment, label):
    """The first pair's alignment over its words (tokens as the export's
    WordPiece pieces are not returned, rows and columns are cut to the
    non-zero block)."""
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
