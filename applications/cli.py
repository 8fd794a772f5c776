"""The `attention-zoo` command.

    attention-zoo                             # the default job: the demo
    attention-zoo demo [--out DIR] [--only APP ...] [--quick]
    attention-zoo demo kernel-regression [--out DIR] [--epochs N] ...
    attention-zoo train APP [--data PATH] [--epochs N] ...
    attention-zoo SERVE_COMMAND MODEL ...     # run APP's export
    attention-zoo models                      # the shipped models
    attention-zoo serve MODEL [TF Serving's flags]  # REST + gRPC server

The applications (APP) and their inference commands come from
`applications.registry` (`attention-zoo --help` lists them). Each job's
own flags follow its name; `attention-zoo train APP --help` lists them.
`attention-zoo demo` (the default job) trains every application briefly on
its generated data, exports it, serves the export from a fresh process and
prints a summary table (`applications.demo.run`).
"""

import argparse
import importlib
import sys

from applications import registry
from applications.common import startup

# Job name -> module with a `main(argv)`; imported only when chosen, so
# `--help` stays fast.
DEMOS = {
    "kernel-regression": "applications.kernel_regression.demo",
}
FULL_DEMO = "applications.demo.run"  # `demo` without one of DEMOS' names
MODELS = "applications.models_command"
SERVE = "applications.serve_command"
_APPLICATIONS = registry.all_applications()
TRAINERS = {app.name: app.train_module for app in _APPLICATIONS}
COMMANDS = {app.infer_command: app.infer_module for app in _APPLICATIONS}
COMMAND_HELP = {app.infer_command: app.infer_help for app in _APPLICATIONS}
DEFAULT_JOB = ["demo"]


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
        ("demo", DEMOS, "train, export and serve every application"),
        ("train", TRAINERS, "train, evaluate and export an application"),
    ]:
        sub = commands.add_parser(command, help=help_text, add_help=False)
        if command == "demo":
            sub.add_argument(
                "name",
                nargs="?",
                choices=sorted(choices),
                help="one demo alone (default: the full demo)",
            )
        else:
            sub.add_argument("name", choices=sorted(choices))
        sub.add_argument(
            "args",
            nargs=argparse.REMAINDER,
            help="the job's own flags (see NAME --help)",
        )
    commands.add_parser(
        "models",
        help="list the trained models shipped in saved_models/",
        add_help=False,
    ).add_argument("args", nargs=argparse.REMAINDER)
    commands.add_parser(
        "serve",
        help="serve exports with TF Serving's REST and gRPC APIs "
        "(tensorflow_model_server's flags)",
        add_help=False,
    ).add_argument("args", nargs=argparse.REMAINDER)
    for command in COMMANDS:
        sub = commands.add_parser(
            command,
            help=COMMAND_HELP[command],
            add_help=False,
        )
        sub.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv=None):
    """Runs a job; a file it cannot write (a full disk) ends it with one
    line naming the file and exit code 1, not a traceback."""
    try:
        return _main(argv)
    except OSError as error:
        # Looked up, not imported: importing the package loads TensorFlow,
        # and a `WriteError` was raised only where it is loaded.
        atomic_file = sys.modules.get("attention_zoo.export.atomic_file")
        if atomic_file is None or not isinstance(error, atomic_file.WriteError):
            raise
        print(f"attention-zoo: error: {error}", file=sys.stderr)
        return 1
    finally:
        # A command holds its run folder until it ends, also when it runs
        # in this process (tests, notebooks) rather than its own.
        run_lock = sys.modules.get("applications.common.run_lock")
        if run_lock is not None:
            run_lock.release_run()


def _main(argv=None):
    # Before any job can import TensorFlow: its C++ start-up lines are
    # dropped and later INFO / WARNING ones hidden (users may override).
    startup.quiet_tensorflow_start()
    argv = sys.argv[1:] if argv is None else list(argv)
    argv = argv or DEFAULT_JOB
    if argv[0] in ("models", "serve"):
        module = MODELS if argv[0] == "models" else SERVE
        return importlib.import_module(module).main(argv[1:])
    if argv[0] in COMMANDS:
        # Handed over untouched: argparse's REMAINDER would reject a leading
        # flag such as `caption --help`.
        return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
    if argv[0] == "demo" and (len(argv) == 1 or argv[1] not in DEMOS):
        # The full demo, with its own flags (`demo --only APP`).
        return importlib.import_module(FULL_DEMO).main(argv[1:])
    args = _parser().parse_args(argv)
    if args.version:
        from attention_zoo import __version__

        print(f"attention-zoo {__version__}")
        return 0
    if args.command is None:
        _parser().print_help()
        return 2
    if args.command == "demo":
        module = DEMOS[args.name]
    elif args.command == "train":
        # Before the application, and TensorFlow, is imported.
        from applications.commands import train_flags

        train_flags.precheck(args.name, args.args)
        module = TRAINERS[args.name]
    else:
        module = COMMANDS[args.command]
    return importlib.import_module(module).main(args.args)


if __name__ == "__main__":
    sys.exit(main())
