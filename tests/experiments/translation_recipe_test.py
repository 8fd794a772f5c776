"""`experiments.translation_recipe`: each variant's config adds what it
names to the baseline, Multi30K's files are read as aligned pairs, and a
variant's row (here a tiny model on generated pairs) holds its scores
and, for `averaged`, the mean of the last epochs' weights."""

import argparse
import os

import numpy as np
import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator
from experiments import translation_recipe
from experiments.translation_recipe import VARIANTS
from experiments.translation_recipe import variant_config


@pytest.mark.parametrize("model", ["rnn", "transformer"])
def test_each_variant_adds_what_it_names(model):
    baseline = variant_config(model, "baseline")
    assert baseline.label_smoothing == 0 and baseline.dropout == 0.1
    assert baseline.learning_rate_schedule == "constant"
    changed = {}
    for name in VARIANTS[1:-1]:
        config = variant_config(model, name)
        if config is None:
            assert (name, model) == ("tied", "rnn")
            continue
        changed[name] = {
            key
            for key, value in vars(config).items()
            if value != getattr(baseline, key)
        }
    expected = {
        "label-smoothing": {"label_smoothing"},
        "inverse-sqrt": {"learning_rate_schedule", "warmup_steps"},
        "dropout": {"dropout"}
        | ({"attention_dropout"} if model == "transformer" else set()),
        "joint-vocabulary": {"joint_vocabulary"},
        "averaged": set(),  # the experiment averages, not the config
        "placeholders": {"placeholders"},
    }
    if model == "transformer":
        expected["tied"] = {"tie_embeddings"}
    assert changed == expected
    every = variant_config(model, "all")
    for name, fields in changed.items():
        for field in fields:
            assert getattr(every, field) == getattr(
                variant_config(model, name), field
            ), (name, field)


@pytest.mark.parametrize("model", ["rnn", "transformer"])
def test_a_joined_variant_adds_each_of_its_ingredients(model):
    name = "label-smoothing+inverse-sqrt+averaged+placeholders"
    joined = variant_config(model, name)
    alone = [variant_config(model, each) for each in name.split("+")]
    baseline = vars(variant_config(model, "baseline"))
    for key, value in vars(joined).items():
        # The one ingredient that changes a field sets it; else the
        # baseline's value stays.
        set_by = [vars(c)[key] for c in alone if vars(c)[key] != baseline[key]]
        assert len(set_by) <= 1, key
        assert value == (set_by[0] if set_by else baseline[key]), key
    assert joined.label_smoothing == 0.1 and joined.warmup_steps == 1000
    assert joined.placeholders == ("numbers", "names", "unknown")
    assert translation_recipe.averages(name)
    assert not translation_recipe.averages("label-smoothing+inverse-sqrt")
    assert translation_recipe._adds("label-smoothing+averaged") == (
        "label smoothing 0.1, mean of the last 2 epochs"
    )
    assert (variant_config(model, "tied+averaged") is None) == (model == "rnn")


@pytest.mark.parametrize(
    "name, message",
    [
        ("label-smoothing+beam", "unknown ingredient 'beam'"),
        ("averaged+averaged", "repeated ingredient 'averaged'"),
        ("all+tied", "unknown ingredient 'all'"),
    ],
)
def test_a_bad_variant_is_a_usage_error_naming_it(name, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        translation_recipe._parser().parse_args(["--variants", name])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(
    not os.path.isdir(translation_recipe.MULTI30K),
    reason="../shared/data/multi30k is absent",
)
def test_multi30k_reads_aligned_pairs():
    validation = translation_recipe._multi30k("val")
    assert len(validation) == 1014
    english, german = validation[0]
    assert english.startswith("A group of men") and "Männer" in german


def test_an_averaged_variant_scores_the_mean_of_its_last_epochs(
    monkeypatch, tmp_path
):
    config = registry.get("translation").tiny_config().replace(epochs=3)
    pairs = make_synthetic_pairs(120, seed=0).pairs
    kept = []
    monkeypatch.setattr(
        translation_recipe.weight_averaging,
        "averaged_weights",
        _recording(translation_recipe.weight_averaging.averaged_weights, kept),
    )
    fitted = []
    monkeypatch.setattr(
        translation_recipe,
        "Translator",
        lambda config: fitted.append(Translator(config)) or fitted[-1],
    )
    args = _row_args(tmp_path, "rnn", test=True)
    row = translation_recipe._row(
        args, "averaged", config, pairs[:96], pairs[96:108], pairs[108:]
    )
    assert row["epochs"] == 3 and row["averaged epochs"] == [2, 3]
    weights, _ = kept[0]
    for mine, mean in zip(fitted[0].model.get_weights(), weights):
        np.testing.assert_array_equal(mine, mean)
    for key in ("val BLEU", "val chrF", "test BLEU", "test chrF"):
        assert 0 <= row[key] <= 100
    # The variant is saved as it was scored: the averaged weights.
    # The tiny config's 12 pieces, not the experiment's 32, are named.
    saved = Translator.load(str(tmp_path / "spa-eng-rnn-length-12-averaged"))
    for mine, theirs in zip(weights, saved.model.get_weights()):
        np.testing.assert_array_equal(mine, theirs)


def _row_args(save, model, test):
    """The flags `_row` reads: spa-eng, 5 minutes, no search chosen,
    saved in `save`."""
    return argparse.Namespace(
        minutes=5.0,
        choose_search=False,
        test=test,
        save=str(save),
        pair="spa-eng",
        model=model,
    )


def _recording(function, calls):
    def recorded(*args):
        result = function(*args)
        calls.append(result)
        return result

    return recorded


def test_a_shallow_decoder_is_named_in_the_row_and_the_saved_folder(tmp_path):
    args = translation_recipe._parser().parse_args(
        ["--model", "transformer", "--decoder-layers", "1"]
    )
    assert args.decoder_layers == 1
    config = registry.get("translation").tiny_config()
    config = config.replace(
        model="transformer", num_layers=2, decoder_layers=1, epochs=1
    )
    pairs = make_synthetic_pairs(60, seed=0).pairs
    args = _row_args(tmp_path, "transformer", test=False)
    row = translation_recipe._row(
        args, "baseline", config, pairs[:48], pairs[48:], []
    )
    assert row["decoder layers"] == 1
    saved = Translator.load(
        str(tmp_path / "spa-eng-transformer-1-decoder-length-12-baseline")
    )
    assert saved.config.decoder_layers == 1


def test_the_command_line_sizes_reach_each_variant_and_its_row():
    parse = translation_recipe._parser().parse_args
    args = parse(
        ["--max-length", "64", "--epochs", "2", "--decoder-layers", "1"]
    )
    config = translation_recipe.configure(args, "label-smoothing")
    assert (config.max_length, config.epochs) == (64, 2)
    assert (config.decoder_layers, config.label_smoothing) == (1, 0.1)
    assert translation_recipe._shape(config) == {
        "decoder layers": 1,
        "max length": 64,
    }
    default = translation_recipe.configure(parse([]), "baseline")
    assert default.max_length == translation_recipe.BASE["max_length"] == 32
    assert translation_recipe._shape(default) == {}
    rnn = parse(["--model", "rnn", "--max-length", "64"])
    assert translation_recipe.configure(rnn, "tied") is None
