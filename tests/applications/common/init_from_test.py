"""Fine-tuning from an export: `from_preset` in Python and `train APP
--init-from` start from the exported weights and keep the vocabularies."""

import json
import os
import types

import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.commands import train_steps
from attention_zoo_apps.translation import train as translation_train
from attention_zoo_apps.translation.translator import Translator
from tests.support import tiny_runs

# Application -> (generated training examples, config changes) of the
# exported model: a few epochs of tiny models, whose loss on new examples
# falls to about 0.87 of a fresh model's (the shipped models', to a small
# share: see docs/quality/fine-tuning.md).
TRAINING = {
    "entailment": (
        1000,
        dict(epochs=8, embedding_dim=32, hidden_units=32, learning_rate=0.003),
    ),
}


def _first_batch_loss(bundle, examples):
    dataset = bundle.validation_dataset(examples).take(1)
    return bundle.model.evaluate(dataset, verbose=0, return_dict=True)["loss"]


# In the slow tier (it trains and exports a model); the quick twin is
# from_export_test: an export reads back with the same config,
# vocabularies and weights (so its loss is the exported model's).
# Translation's is shipped_models_test's from the shipped model, and
# `test_init_from_on_the_command_line` below keeps its vocabularies.
@pytest.mark.slow
@pytest.mark.parametrize("application", ["entailment"])
def test_from_preset_starts_far_below_a_fresh_model(application, tmp_path):
    described = registry.get(application)
    bundle_class = described.bundle_class()
    count, changes = TRAINING[application]
    trained = bundle_class(described.tiny_config().replace(**changes))
    (train,) = described.fit_arguments(count, seed=0)[:1]
    trained.fit(train, verbose=0)
    trained.export(str(tmp_path / "1"), jit_compile=False)

    (mine,) = described.fit_arguments(64, seed=11)[:1]  # new examples
    loaded = bundle_class.from_preset(str(tmp_path))
    tokenizers = {
        attribute: getattr(loaded, attribute)
        for attribute in bundle_class.tokenizer_dirs
    }
    fresh = bundle_class(loaded.config, **tokenizers)
    fresh.ensure_model()
    started = _first_batch_loss(loaded, mine)
    from_scratch = _first_batch_loss(fresh, mine)
    # Exactly where the exported model was, and well below a fresh one.
    assert started == pytest.approx(_first_batch_loss(trained, mine), rel=1e-5)
    assert started < 0.95 * from_scratch, (started, from_scratch)
    # `fit` goes on from there with the same vocabularies.
    vocabularies = {a: list(t.vocabulary) for a, t in tokenizers.items()}
    loaded.fit(mine, epochs=1, verbose=0)
    for attribute, vocabulary in vocabularies.items():
        assert list(getattr(loaded, attribute).vocabulary) == vocabulary


def _train(argv):
    return translation_train.main(argv)


@pytest.mark.slow
def test_init_from_on_the_command_line(shared, tmp_path, capsys):
    # The session's finished 1-epoch tiny run, exported (version 1).
    export = str(tiny_runs.finished_run(shared, "translation") / "export")
    run = str(tmp_path / "b")
    assert _train([
        "--synthetic-pairs", "120", "--init-from", export, "--epochs", "2",
        "--learning-rate", "0.0005", "--label-smoothing", "0.1",
        "--no-tensorboard", "--run-dir", run,
    ]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"--init-from {export}: fine-tuning" in out
    with open(os.path.join(export, "1", "config.json")) as f:
        exported = json.load(f)
    with open(os.path.join(run, "config.json")) as f:
        tuned = json.load(f)
    assert exported["epochs"] == 1
    assert tuned == {
        **exported,
        "epochs": 2,
        "learning_rate": 0.0005,
        "label_smoothing": 0.1,
    }
    for folder in ("source_vocab", "target_vocab"):
        with open(os.path.join(export, "1", folder, "vocabulary.txt")) as f:
            shipped = f.read()
        with open(os.path.join(run, folder, "vocabulary.txt")) as f:
            assert f.read() == shipped


def test_init_from_refuses_flags_that_change_the_model(
    shared, tmp_path, capsys
):
    # The session's finished 1-epoch tiny run, exported (version 1).
    export = str(tiny_runs.finished_run(shared, "translation") / "export")
    capsys.readouterr()
    for flags, expected in [
        (["--units", "16"], "units is 8 there, 16 here"),
        (["--model", "transformer"], "model is 'rnn' there, 'transformer'"),
        (["--init-from", "no-such-model"], "neither a folder nor a shipped"),
    ]:
        with pytest.raises(SystemExit) as exited:
            _train(["--init-from", export, "--run-dir", str(tmp_path / "b")]
                   + flags)  # fmt: skip
        assert exited.value.code == 2
        assert expected in capsys.readouterr().err


def test_init_from_refuses_no_notes_for_a_model_that_reads_notes(
    tmp_path, monkeypatch
):
    # `--no-notes` sets `use_notes` (ehr's `FIELD_FLAGS`): given against an
    # export that reads notes, it is refused, not silently dropped.
    from attention_zoo_apps.commands import train_steps
    from attention_zoo_apps.common.flag_checks import UsageError
    from attention_zoo_apps.ehr import flags
    from attention_zoo_apps.ehr import train as ehr_train
    from attention_zoo_apps.ehr.config import EHRConfig
    from attention_zoo_apps.ehr.risk_model import RiskModel

    exported = types.SimpleNamespace(config=EHRConfig(use_notes=True))
    monkeypatch.setattr(
        RiskModel, "from_export", classmethod(lambda cls, *a: exported)
    )
    argv = ["--init-from", str(tmp_path), "--no-notes"]
    args, strategy = train_steps.parse_flags(flags.train_parser(), argv)
    wanted = ehr_train._config(args, synthetic=True)
    with pytest.raises(UsageError, match="use_notes is True there, False"):
        train_steps.init_from(RiskModel, args, strategy, wanted)


@pytest.mark.parametrize(
    "given, expected",
    [
        (set(), (0.3, 0.2)),  # not given: the export's own stay
        ({"dropout", "label_smoothing"}, (0.1, 0.0)),  # given: the flags'
    ],
)
def test_training_options_come_from_flags_only_when_given(
    shared, monkeypatch, given, expected
):
    export = str(tiny_runs.finished_run(shared, "translation") / "export")
    from_export = Translator.from_export

    def with_options(path, strategy=None):
        bundle = from_export(path, strategy)
        bundle.config = bundle.config.replace(dropout=0.3, label_smoothing=0.2)
        return bundle

    monkeypatch.setattr(Translator, "from_export", with_options)
    wanted = Translator.from_export(export).config.replace(
        dropout=0.1, label_smoothing=0.0, epochs=3
    )
    args = types.SimpleNamespace(init_from=export, given_flags=given)
    bundle = train_steps.init_from(Translator, args, None, wanted)
    config = bundle.config
    assert (config.dropout, config.label_smoothing) == expected
    assert config.epochs == 3  # always the flags'
