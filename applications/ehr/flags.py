"""The flags of `attention-zoo train ehr`: its `parser()`.

Imports no TensorFlow, so that the command checks every flag value, and
answers `--help`, before the training code is imported
(`train_flags.precheck`).
"""

from applications.commands import train_flags
from applications.common.flag_checks import FlagParser
from applications.ehr.options import ENCODERS
from applications.ehr.record_flags import add_record_arguments

# Config field -> the flags (dests) other than its own name that set it
# (`--init-from` refuses one given with another value than the model's).
FIELD_FLAGS = {}


def parser():
    parser = FlagParser(
        prog="attention-zoo train ehr",
        description="Train an attention risk model on patient records, "
        "evaluate it and export it.",
    )
    add_record_arguments(parser)
    parser.add_argument("--synthetic-patients", type=int, default=1500)
    parser.add_argument("--encoder", choices=ENCODERS)
    train_flags.add_training_arguments(parser)
    parser.add_argument("--embedding-dim", type=int)
    parser.add_argument("--units", type=int)
    parser.add_argument("--max-events", type=int)
    parser.add_argument(
        "--no-notes", action="store_true", help="events only, no note"
    )
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument("--test-fraction", type=float, default=0.1)
    train_flags.add_run_arguments(
        parser, "ehr", "checkpoints, vocabularies, scaler, config"
    )
    return parser
