"""The flags of `attention-zoo train ehr`: its `parser()`.

Imports no TensorFlow, so that the command checks every flag value, and
answers `--help`, before the training code is imported
(`train_flags.precheck`).
"""

from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.common.flag_checks import FlagParser
from attention_zoo_apps.ehr.options import ENCODERS
from attention_zoo_apps.ehr.record_flags import add_record_arguments

# Config field -> the flags (dests) other than its own name that set it
# (`--init-from` refuses one given with another value than the model's).
FIELD_FLAGS = {"use_notes": ("no_notes",)}


def train_parser():
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


INFER_PROG = "attention-zoo explain"


def infer_parser():
    """The parser of `attention-zoo explain` (`infer.py`)."""
    prog = INFER_PROG
    parser = infer_flags.command_parser(
        prog,
        "Explain one patient's predicted risk with the model of an ehr run "
        "folder (`attention-zoo train ehr --run-dir DIR`, not an export): "
        "the attention over the events and the note, as HTML and PNG.",
        [
            f"{prog} outputs/ehr --patient p00007",
            f"{prog} outputs/ehr --patient 20001 --data records/ "
            "--out report.html",
        ],
    )
    parser.add_argument(
        "directory", help="the run folder of `train ehr` (--run-dir)"
    )
    parser.add_argument("--patient", required=True, help="the patient id")
    add_record_arguments(parser)
    parser.add_argument(
        "--synthetic-patients",
        type=int,
        default=1500,
        help="without --data: as many as `train ehr` made",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="without --data: its --seed"
    )
    parser.add_argument(
        "--top-k",
        type=int,
        default=5,
        help="events and words named as the most attended",
    )
    parser.add_argument(
        "--out",
        default="report.html",
        help="the HTML page; the PNG gets the same stem",
    )
    return parser
