"""The flags every `attention-zoo train APP` shares and the config values
they make; `--jit-compile` on every `attention-zoo train APP`."""

import argparse
import importlib

import pytest

from attention_zoo_apps.commands import train_flags
from tests.support import tiny_bundles


def _parser():
    parser = argparse.ArgumentParser(prog="attention-zoo train demo")
    train_flags.add_training_arguments(parser)
    parser.add_argument("--units", type=int)
    train_flags.add_run_arguments(parser, "demo", "checkpoints")
    return parser


def test_defaults_name_the_application():
    args = _parser().parse_args([])
    assert args.run_dir == "outputs/demo" and args.seed == 0
    assert args.export is None and args.epochs is None
    help_text = _parser().format_help()
    assert "saved_models/demo" in help_text and "--strategy" in help_text


def test_given_flags_override_values_which_override_defaults():
    args = _parser().parse_args(
        ["--epochs", "3", "--learning-rate", "0.5", "--seed", "7"]
    )
    defaults = {"epochs": 10, "units": 64, "batch_size": 8, "cell": "gru"}
    values = train_flags.config_values(args, defaults, ("units",), cell="lstm")
    assert values == {
        "epochs": 3,  # the flag
        "units": 64,  # no flag: the default stays
        "batch_size": 8,
        "cell": "lstm",  # the application's value
        "learning_rate": 0.5,
        "seed": 7,
    }
    # Nothing given: only the seed and the application's values are set.
    args = _parser().parse_args([])
    assert train_flags.config_values(args, {}, ("units",)) == {"seed": 0}
    assert defaults["epochs"] == 10 and defaults["cell"] == "gru"  # a copy


@pytest.mark.parametrize("application", tiny_bundles.APPLICATIONS)
def test_every_train_command_has_the_jit_compile_flag(application):
    flags = importlib.import_module(f"attention_zoo_apps.{application}.flags")
    parser = flags.train_parser()
    assert parser.parse_args([]).jit_compile == "auto"
    for flag, value in (("on", True), ("off", False), ("auto", None)):
        args = parser.parse_args(["--jit-compile", flag])
        assert train_flags.jit_compile_option(args.jit_compile) is value
    with pytest.raises(SystemExit):
        parser.parse_args(["--jit-compile", "yes"])
