"""The flags of the commands that answer from an export (`attention-zoo
translate`, `caption`, `predict`, `explain`): the export folder argument,
`--seed`, the help with an example, and `refusals`, which turns a
`UsageError` into the command's one-line usage error (exit code 2).

Each application's `flags.infer_parser()` is built of these; they import
no TensorFlow, so that `attention-zoo INFER_COMMAND` answers `--help` and
refuses a bad flag (`precheck`) before the command's module, and
TensorFlow, is imported (`attention_zoo_apps.cli`). Loading and checking the
export is `infer_steps`.
"""

import argparse
import contextlib
import sys
import textwrap

from attention_zoo_apps import registry
from attention_zoo_apps.common.flag_checks import UsageError

SIGNATURE = "serving_default"
# A sampling export's signature that takes the seeds
# (`attention_zoo_apps.common.search_serving`).
SEEDED_SIGNATURE = "seeded"


def command_parser(prog, description, examples):
    """An argument parser whose `--help` ends with `examples` (command
    lines, shown as written)."""
    return argparse.ArgumentParser(
        prog=prog,
        description=textwrap.fill(description, 79),
        epilog="example:\n" + "\n".join(f"  {line}" for line in examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def export_parser(prog, description, examples):
    """A `command_parser` whose first argument is `directory`: a shipped
    model's name (`attention_zoo_apps.common.zoo`), an export folder (its newest
    version is used) or a version folder."""
    parser = command_parser(prog, description, examples)
    parser.add_argument(
        "directory",
        metavar="MODEL",
        help="a shipped model's name (`attention-zoo models` lists them), "
        "an export folder (its newest numbered version is served) or one "
        "version folder",
    )
    return parser


def precheck(app, argv):
    """`attention-zoo INFER_COMMAND`'s usage errors, before the command's
    module (and TensorFlow) is imported: APP's `flags.infer_parser()`
    reads `argv` and answers `--help` (exit code 0) or refuses a flag
    (exit code 2)."""
    registry.get(app).flags().infer_parser().parse_args(argv)


@contextlib.contextmanager
def refusals(parser):
    """Ends the command on a `UsageError` raised inside (by the checks
    below or by `main`): `prog: error: message` on stderr and exit code
    2, argparse's usage error without the usage line. The one place these
    commands call their parser."""
    try:
        yield
    except UsageError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")


def warn_truncated(prog, items, what):
    """One line on stderr, `prog: warning: pair 1, pair 3: what`, for the
    inputs `items` (str) that were cut; nothing when there are none."""
    if items:
        print(
            f"{prog}: warning: {', '.join(items)}: {what}",
            file=sys.stderr,
        )


def add_seed_argument(parser, noun):
    """`--seed N`: an export that samples draws `noun` `i` with seed
    `N + i` (its `seeded` signature), as `seed=N` does in Python."""
    parser.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help=f"for an export that samples: {noun} i draws with seed N + i "
        "(the same seeds repeat the same output, as seed=N in Python); "
        "without it the export draws new seeds",
    )
