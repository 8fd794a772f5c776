"""The `attention-zoo` command.

    attention-zoo                             # the default job: the demo
    attention-zoo demo [--out DIR] [--only APP ...] [--quick]
    attention-zoo demo kernel-regression [--out DIR] [--epochs N] ...
    attention-zoo figures [--out DIR] [--only NAME ...]  # the book's figures
    attention-zoo train APP [--data PATH] [--epochs N] ...
    attention-zoo INFER_COMMAND MODEL ...     # run APP's export
    attention-zoo models                      # the shipped models
    attention-zoo serve MODEL [TF Serving's flags]  # REST + gRPC server

The applications (APP) and their inference commands come from
`attention_zoo_apps.registry` (`attention-zoo --help` lists them). Each job's
own flags follow its name; `attention-zoo train APP --help` lists them.
`attention-zoo demo` (the default job) trains every application briefly on
its generated data, exports it, serves the export from a fresh process and
prints a summary table (`attention_zoo_apps.demo.run`).

This is the one place that imports lazily to start fast: a job's flags
are read by a parser that imports no TensorFlow (the applications'
`flags`, `attention_zoo_apps.commands.train_flags` / `infer_flags`,
`attention_zoo_apps.demo.flags`, `attention_zoo_apps.figures.flags`), and only
then
is the job's module, which imports what it uses at its top, imported
(`_run`).
"""

import argparse
import importlib
import importlib.metadata
import sys

from attention_zoo_apps import registry
from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.common import startup
from attention_zoo_apps.demo import flags as demo_flags
from attention_zoo_apps.figures import flags as figures_flags

# Job name -> module with a `main(argv)`. Each job's flags are read first
# by a parser that imports no TensorFlow (`_precheck`), so that `--help`
# and a bad flag answer at once; then the job's module is imported, here
# and nowhere else below `main` (`_run`).
DEMOS = {
    "kernel-regression": "attention_zoo_apps.kernel_regression.demo",
}
FULL_DEMO = "attention_zoo_apps.demo.run"  # `demo` without one of DEMOS' names
FIGURES = "attention_zoo_apps.figures.run"
MODELS = "attention_zoo_apps.models_command"
SERVE = "attention_zoo_apps.serve_command"
_APPLICATIONS = registry.all_applications()
TRAINERS = {app.name: app.train_module for app in _APPLICATIONS}
COMMANDS = {app.infer_command: app.infer_module for app in _APPLICATIONS}
COMMAND_HELP = {app.infer_command: app.infer_help for app in _APPLICATIONS}
_COMMAND_APPLICATIONS = {app.infer_command: app.name for app in _APPLICATIONS}
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
    # Jobs whose flags are all their own (`args`), the inference commands
    # last.
    for command, help_text in [
        (
            "figures",
            "remake the textbook's attention figures as PNGs and "
            "a gallery page",
        ),
        ("models", "list the trained models shipped in saved_models/"),
        (
            "serve",
            "serve exports with TF Serving's REST and gRPC APIs "
            "(tensorflow_model_server's flags)",
        ),
        *COMMAND_HELP.items(),
    ]:
        commands.add_parser(
            command, help=help_text, add_help=False
        ).add_argument("args", nargs=argparse.REMAINDER)
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
        run_lock = sys.modules.get("attention_zoo_apps.common.run_lock")
        if run_lock is not None:
            run_lock.release_run()


def _main(argv=None):
    # Before any job can import TensorFlow: its C++ start-up lines are
    # dropped and later INFO / WARNING ones hidden (users may override).
    startup.quiet_tensorflow_start()
    argv = sys.argv[1:] if argv is None else list(argv)
    argv = argv or DEFAULT_JOB
    if argv[0] in ("models", "serve"):
        return _run(MODELS if argv[0] == "models" else SERVE, argv[1:])
    if argv[0] in COMMANDS:
        # Handed over untouched: argparse's REMAINDER would reject a leading
        # flag such as `caption --help`.
        infer_flags.precheck(_COMMAND_APPLICATIONS[argv[0]], argv[1:])
        return _run(COMMANDS[argv[0]], argv[1:])
    if argv[0] == "demo" and (len(argv) == 1 or argv[1] not in DEMOS):
        # The full demo, with its own flags (`demo --only APP`).
        demo_flags.parse(argv[1:])
        return _run(FULL_DEMO, argv[1:])
    if argv[0] == "figures":
        figures_flags.parse(argv[1:])
        return _run(FIGURES, argv[1:])
    args = _parser().parse_args(argv)
    if args.version:
        print(f"attention-zoo {_version()}")
        return 0
    if args.command is None:
        _parser().print_help()
        return 2
    if args.command == "demo":
        return _run(DEMOS[args.name], args.args)
    train_flags.precheck(args.name, args.args)
    return _run(TRAINERS[args.name], args.args)


def _run(module, argv):
    """`module.main(argv)`: the job's module imported once its flags are
    read, the one import below `main` that waits for them."""
    return importlib.import_module(module).main(argv)


def _version():
    """The installed distribution's version, read from its metadata
    without importing the package (which starts TensorFlow); the
    package's own `__version__` in a checkout that is not installed."""
    try:
        return importlib.metadata.version("attention-zoo")
    except importlib.metadata.PackageNotFoundError:
        # lazy: importing the package starts TensorFlow (uninstalled only)
        from attention_zoo import __version__

        return __version__


if __name__ == "__main__":
    sys.exit(main())
