"""The `attention-zoo` command.

    attention-zoo                             # the default job (a demo)
    attention-zoo demo kernel-regression [--out DIR] [--epochs N] ...
    attention-zoo train translation [--data FILE] [--epochs N] ...
    attention-zoo translate DIR "text" ...
    attention-zoo train entailment [--data PATH] [--epochs N] ...
    attention-zoo predict DIR --premise "..." --hypothesis "..."
    attention-zoo train captioning [--data DIR] [--epochs N] ...
    attention-zoo caption DIR image.jpg [image2.png ...] [--plot out.png]
    attention-zoo train ehr [--data DIR] [--format long|mimic] [--epochs N] ...

Each job's own flags follow its name; `attention-zoo train APP --help`
lists them.
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
TRAINERS = {
    "captioning": "applications.captioning.train",
    "ehr": "applications.ehr.train",
    "entailment": "applications.entailment.train",
    "translation": "applications.translation.train",
}
COMMANDS = {
    "caption": "applications.captioning.serve",
    "predict": "applications.entailment.predict",
    "translate": "applications.translation.serve",
}
DEFAULT_JOB = ["demo", "kernel-regression"]


def _parser():
    parser = argparse.ArgumentParser(
        prog="attention-zoo",
        description="Attention models: demos, training, export, serving.",
        epilog="With no arguments, runs: attention-zoo "
        + " ".join(DEFAULT_JOB),
    )
    parser.add_argument(
        "--version",
        action="store_true",
        help="print the package version and exit",
    )
    commands = parser.add_subparsers(dest="command")
    for command, choices, help_text in [
        ("demo", DEMOS, "run a self-contained demo"),
        ("train", TRAINERS, "train, evaluate and export an application"),
    ]:
        sub = commands.add_parser(command, help=help_text, add_help=False)
        sub.add_argument("name", choices=sorted(choices))
        sub.add_argument(
            "args",
            nargs=argparse.REMAINDER,
            help="the job's own flags (see NAME --help)",
        )
    for command in COMMANDS:
        sub = commands.add_parser(
            command, help="run an exported model", add_help=False
        )
        sub.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        # Handed over untouched: argparse's REMAINDER would reject a leading
        # flag such as `caption --help`.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
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
    if args.command == "demo":
        module = DEMOS[args.name]
    elif args.command == "train":
        module = TRAINERS[args.name]
    else:
        module = COMMANDS[args.command]
    return importlib.import_module(module).main(args.args)


if __name__ == "__main__":
    sys.exit(main())
