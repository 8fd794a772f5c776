"""The `attention-zoo` command.

    attention-zoo                             # the default job (a demo)
    attention-zoo demo kernel-regression [--out DIR] [--epochs N] ...

Each job's own flags follow its name; `attention-zoo demo NAME --help` lists
them.
"""

import argparse
import importlib
import os
import sys

# Job name -> module with a `main(argv)`; imported only when chosen, so
# `--help` stays fast.
DEMOS = {
    "kernel-regression": "applications.kernel_regression.demo",
}
DEFAULT_JOB = ["demo", "kernel-regression"]


def _parser():
    parser = argparse.ArgumentParser(
        prog="attention-zoo",
        description="Attention models: demos, training, export.",
        epilog="With no arguments, runs: attention-zoo "
        + " ".join(DEFAULT_JOB),
    )
    parser.add_argument(
        "--version",
        action="store_true",
        help="print the package version and exit",
    )
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser(
        "demo", help="run a self-contained demo", add_help=False
    )
    demo.add_argument("name", choices=sorted(DEMOS))
    demo.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="the demo's own flags (see NAME --help)",
    )
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv or DEFAULT_JOB)
    if args.version:
        from attention_zoo import __version__

        print(f"attention-zoo {__version__}")
        return 0
    if args.command is None:
        _parser().print_help()
        return 2
    # Quieten TensorFlow's C++ start-up logging; users may override.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    module = importlib.import_module(DEMOS[args.name])
    return module.main(args.args)


if __name__ == "__main__":
    sys.exit(main())
