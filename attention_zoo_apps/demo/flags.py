"""The flags of `attention-zoo demo` (`attention_zoo_apps.demo.run`): its
`parser()` and `parse(argv)`, which import no TensorFlow, so that the
command answers `--help` and refuses a bad flag before the demo, and
TensorFlow, is imported (`attention_zoo_apps.cli`)."""

import argparse
import os

from attention_zoo_apps import registry

KERNEL_REGRESSION = "kernel-regression"
SHIPPED = "shipped"  # the shipped models, on their cards' examples
CHOICES = (SHIPPED, KERNEL_REGRESSION) + registry.APPLICATIONS


def parser():
    parser = argparse.ArgumentParser(
        prog="attention-zoo demo",
        description="Train, export, reload and serve every application "
        "briefly on its generated data, gather the attention pictures and "
        "print a summary table.",
        epilog="`attention-zoo demo kernel-regression --help`: the "
        "kernel-regression demo alone.",
    )
    parser.add_argument(
        "--out",
        default=os.path.join("outputs", "demo"),
        help="folder for runs, exports, pictures and the summary "
        "(default: outputs/demo)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=CHOICES,
        metavar="APP",
        help=f"run only these, in this order ({', '.join(CHOICES)})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny models and one epoch: checks the pipeline in well under "
        "a minute per application, learns little",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed calls of each export after a warm-up call (median)",
    )
    return parser


def parse(argv=None):
    """The demo's flags read from `argv` (None: `sys.argv[1:]`), checked:
    a bad value is the parser's usage error (exit code 2)."""
    demo_parser = parser()
    args = demo_parser.parse_args(argv)
    if args.repeats < 1:
        demo_parser.error("--repeats must be at least 1")
    return args
