"""The flags of `attention-zoo figures` (`attention_zoo_apps.figures.run`): its
`parser()` and `parse(argv)`, which import no TensorFlow, so that the
command answers `--help` and refuses a bad flag before TensorFlow is
imported (`attention_zoo_apps.cli`)."""

import argparse
import os

# The figures, in the book's order: the chapter's numbers, then the
# lecture notes' multi-head pictures.
FIGURES = (
    "15.15",
    "15.16",
    "15.17",
    "15.19",
    "15.20",
    "15.21",
    "15.22",
    "heads",
    "positions",
)


def parser():
    parser = argparse.ArgumentParser(
        prog="attention-zoo figures",
        description="Reproduce the textbook's attention figures (15.15 to "
        "15.22) and the lecture notes' multi-head pictures with this "
        "library and the shipped models: a PNG and a caption each, "
        "gathered in OUT/index.md.",
    )
    parser.add_argument(
        "--out",
        default=os.path.join("outputs", "figures"),
        help="folder for the PNGs and index.md (default: outputs/figures)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=FIGURES,
        metavar="NAME",
        help=f"make only these, in this order ({', '.join(FIGURES)})",
    )
    return parser


def parse(argv=None):
    """The command's flags read from `argv` (None: `sys.argv[1:]`); a bad
    value is the parser's usage error (exit code 2)."""
    return parser().parse_args(argv)
