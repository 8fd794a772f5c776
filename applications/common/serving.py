"""What the commands that run an export share: the export folder argument
and the version it names."""

import argparse

from attention_zoo.export import resolve_version


def export_parser(prog, description):
    """An argument parser whose first argument is `directory`: an export
    folder (its newest version is used) or a version folder."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("directory", help="export folder or version folder")
    return parser


def export_version(parser, directory):
    """The version folder to serve in `directory` (`resolve_version`); a
    usage error of `parser` (exit code 2) naming the folder when there is
    none."""
    try:
        return resolve_version(directory)
    except FileNotFoundError as error:
        parser.error(str(error))
