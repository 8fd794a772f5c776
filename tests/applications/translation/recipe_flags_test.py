"""`train translation`'s `--dropout`, `--attention-dropout`,
`--tie-embeddings`, `--joint-vocabulary` and the Transformer's sizes
reach the model: the rates of its dropout layers and attentions, its
widths, heads and blocks, a Transformer whose logits come from
its target embedding (no output `Dense` of its own), one vocabulary of
both sides' words."""

import collections

import pytest

from attention_zoo.layers.multi_head import MultiHead
from attention_zoo_apps.common.flag_checks import UsageError
from attention_zoo_apps.common.flag_checks import check_flag_values
from attention_zoo_apps.translation import flags
from attention_zoo_apps.translation import train
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator


def _translator(*argv, pairs=60):
    args = flags.train_parser().parse_args(list(argv))
    translator = Translator(train._config(args, synthetic=True))
    translator.ensure_vocabularies(make_synthetic_pairs(pairs, seed=0).pairs)
    translator.build()
    return translator


def _dropout_rates(model):
    """The rates of the model's `Dropout` layers but the attention
    weights' (`MultiHead`'s own `dropout`, 0 in the Transformer)."""
    rates = set()
    for layer in model._flatten_layers():
        if type(layer).__name__ == "Dropout":
            if layer.name != "attention_dropout":
                rates.add(layer.rate)
    return rates


def test_dropout_reaches_every_dropout_layer():
    for model in ("rnn", "transformer"):
        translator = _translator("--model", model, "--dropout", "0.3")
        assert translator.config.dropout == 0.3
        assert _dropout_rates(translator.model) == {0.3}, model


def test_attention_dropout_reaches_every_attention_of_the_transformer():
    translator = _translator(
        "--model", "transformer", "--attention-dropout", "0.2"
    )
    rates = {
        layer.dropout
        for layer in translator.model._flatten_layers()
        if isinstance(layer, MultiHead)
    }
    assert rates == {0.2}
    with pytest.raises(ValueError, match="`attention_dropout` needs"):
        _translator("--attention-dropout", "0.2")


def test_tied_embeddings_drop_the_transformers_output_weights():
    untied = _translator("--model", "transformer")
    tied = _translator("--model", "transformer", "--tie-embeddings")
    assert tied.config.tie_embeddings and not untied.config.tie_embeddings
    target_vocabulary = tied.target_tokenizer.vocabulary_size
    model_dim = tied.config.model_dim
    # The output Dense's kernel is gone (the logits keep a bias).
    saved = untied.model.count_params() - tied.model.count_params()
    assert saved == target_vocabulary * model_dim


def test_the_transformer_takes_its_sizes_from_the_flags():
    translator = _translator(
        "--model", "transformer", "--model-dim", "24", "--num-heads", "3",
        "--feed-forward-dim", "40", "--num-layers", "1",
    )  # fmt: skip
    config = translator.config
    sizes = (config.model_dim, config.num_heads, config.feed_forward_dim)
    assert sizes + (config.num_layers,) == (24, 3, 40, 1)
    attentions = [
        layer
        for layer in translator.model._flatten_layers()
        if isinstance(layer, MultiHead)
    ]
    # One block each: the encoder's self-attention, the decoder's self-
    # and cross-attention, each of 3 heads of 24 / 3 = 8.
    assert len(attentions) == 3
    assert {(a.num_heads, a.key_dim) for a in attentions} == {(3, 8)}
    widths = {
        layer.units
        for layer in translator.model._flatten_layers()
        if type(layer).__name__ == "Dense"
    }
    assert 40 in widths


def test_transformer_sizes_are_refused_elsewhere_and_checked():
    parser = flags.train_parser()
    with pytest.raises(ValueError, match="--num-heads sizes the Transformer"):
        train._config(parser.parse_args(["--num-heads", "2"]), synthetic=True)
    args = parser.parse_args(
        ["--model", "transformer", "--model-dim", "30", "--num-heads", "4"]
    )
    with pytest.raises(ValueError, match="multiple of `num_heads`"):
        train._config(args, synthetic=True)


def test_bad_recipe_flags_are_one_line_errors():
    parser = flags.train_parser()
    with pytest.raises(UsageError, match="--dropout must be at least 0"):
        check_flag_values(parser.parse_args(["--dropout", "1.0"]))
    args = parser.parse_args(["--tie-embeddings"])
    with pytest.raises(ValueError, match="needs `model='transformer'`"):
        train._config(args, synthetic=True)


def test_a_joint_vocabulary_serves_both_sides(tmp_path):
    pairs = make_synthetic_pairs(400, seed=0).pairs
    sources = collections.Counter(w for s, _ in pairs for w in s.split())
    targets = collections.Counter(w for _, t in pairs for w in t.split())
    only_source = max(sources.keys() - targets.keys(), key=sources.get)
    only_target = max(targets.keys() - sources.keys(), key=targets.get)
    separate = _translator(pairs=400)
    assert only_source in separate.source_tokenizer.vocabulary
    assert only_source not in separate.target_tokenizer.vocabulary
    joint = _translator("--joint-vocabulary", pairs=400)
    assert joint.config.joint_vocabulary
    assert joint.source_tokenizer is joint.target_tokenizer
    vocabulary = set(joint.source_tokenizer.vocabulary)
    assert {only_source, only_target} <= vocabulary
    joint.fit(pairs[:64], epochs=1, verbose=0)  # one step: a saved state
    joint.save(tmp_path / "joint")
    loaded = Translator.load(tmp_path / "joint")
    assert list(loaded.source_tokenizer.vocabulary) == list(
        loaded.target_tokenizer.vocabulary
    )
    with pytest.raises(ValueError, match="A `joint_vocabulary` has one size"):
        joint.config.replace(target_vocabulary_size=300)


def _config(*argv, train_pairs=None):
    args = flags.train_parser().parse_args(list(argv))
    return train._config(args, synthetic=False, train_pairs=train_pairs)


def _recipe(config):
    return (
        config.label_smoothing,
        config.learning_rate_schedule,
        config.warmup_steps,
        config.average_checkpoints,
        config.placeholders,
    )


def test_the_transformer_trains_with_the_recipe_unless_told_otherwise():
    # 1,000 updates of warm-up where an epoch has more (spa-eng: 1,673),
    # else one epoch's: 300 pairs in batches of 64 are 5 updates.
    everything = ("numbers", "names", "unknown")
    recipe = (0.1, "inverse_sqrt", 1000, 2, everything)
    config = _config("--model", "transformer", train_pairs=107_020)
    assert _recipe(config) == recipe
    config = _config("--model", "transformer", train_pairs=300)
    assert _recipe(config) == (0.1, "inverse_sqrt", 5, 2, everything)
    config = _config("--model", "transformer", "--batch-size", "7")
    assert config.warmup_steps == 1000  # before the data is read
    # The RNN keeps `TranslationConfig`'s defaults (its ablation is not
    # measured yet).
    baseline = (0.0, "constant", 4000, 1, ())
    assert _recipe(_config(train_pairs=300)) == baseline
    # Each flag overrides its part of the recipe; --patience keeps the
    # best epoch, so nothing is averaged.
    config = _config(
        "--model",
        "transformer",
        "--label-smoothing",
        "0",
        "--learning-rate-schedule",
        "constant",
        "--average-checkpoints",
        "1",
        "--placeholders",
        "none",
        train_pairs=300,
    )
    assert _recipe(config) == baseline
    config = _config("--model", "transformer", "--patience", "2")
    assert config.average_checkpoints == 1
    config = _config(
        "--model", "transformer", "--warmup-steps", "7", train_pairs=10**6
    )
    assert config.warmup_steps == 7
    config = _config(
        "--learning-rate-schedule", "inverse_sqrt", train_pairs=640
    )
    assert (config.learning_rate_schedule, config.warmup_steps) == (
        "inverse_sqrt",
        10,
    )
