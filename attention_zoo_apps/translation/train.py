"""`attention-zoo train translation`: data -> training -> metrics -> export.

    attention-zoo train translation                      # synthetic pair
    attention-zoo train translation --data spa.txt.gz --source-column 1 \
        --target-column 0 --epochs 10 --export saved_models/translation

Progress bars per epoch, a checkpoint per epoch in `--run-dir`; a run that
is interrupted and restarted with the same command resumes from its last
finished epoch. After training: BLEU and chrF on the held-out test split,
example translations, an attention heatmap PNG, and the export.
"""

import os

from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.commands import train_steps
from attention_zoo_apps.common import run_folder
from attention_zoo_apps.common import weight_averaging
from attention_zoo_apps.translation import data
from attention_zoo_apps.translation import direction
from attention_zoo_apps.translation import flags
from attention_zoo_apps.translation.config import TranslationConfig
from attention_zoo_apps.translation.evaluate import alignment_accuracy
from attention_zoo_apps.translation.evaluate import plot_attention
from attention_zoo_apps.translation.options import PLACEHOLDER_RULES
from attention_zoo_apps.translation.search_choice import MAX_PAIRS
from attention_zoo_apps.translation.search_choice import choose_search
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator

# A small model that learns the synthetic pair in a few minutes on 2 cores.
SYNTHETIC_DEFAULTS = dict(
    embedding_dim=64,
    units=128,
    model_dim=64,
    num_heads=2,
    feed_forward_dim=128,
    source_vocabulary_size=400,
    target_vocabulary_size=400,
    max_length=24,
    epochs=8,
)

# What `--model transformer` trains with unless its flags say otherwise:
# the recipe's ingredients that raised validation BLEU on spa-eng
# (docs/quality/translation.md; the RNN's defaults stay until its own
# ablation is measured). Placeholders cost 1.1 validation BLEU on
# Tatoeba's short sentences but keep the names, numbers and emoji that
# ordinary text has.
RECIPE = dict(
    label_smoothing=0.1,
    learning_rate_schedule="inverse_sqrt",
    average_checkpoints=2,
    placeholders=PLACEHOLDER_RULES,
)
# The recipe's warm-up (1,000 updates: about 0.6 epoch of spa-eng), cut
# to one epoch on smaller data.
MAX_WARMUP_STEPS = 1000


# The Transformer's sizes, each set by the flag of its name.
TRANSFORMER_SIZES = ("model_dim", "num_heads", "feed_forward_dim", "num_layers")


def _config(args, synthetic, train_pairs=None):
    """The run's `TranslationConfig`: the flags given, else (the synthetic
    pair's sizes and) the Transformer's `RECIPE` (a warm-up of one epoch's
    updates, at most `MAX_WARMUP_STEPS`: `train_pairs` is the training
    split's size, None before it is read), else `TranslationConfig`'s."""
    defaults = dict(SYNTHETIC_DEFAULTS) if synthetic else {}
    # Sizes of a Transformer that is not trained would size nothing
    # (`--init-from` compares them with the model's instead).
    sized = [name for name in TRANSFORMER_SIZES if getattr(args, name)]
    if sized and args.model != "transformer" and not args.init_from:
        flag = "--" + sized[0].replace("_", "-")
        raise ValueError(
            f"{flag} sizes the Transformer: give --model transformer (the "
            "RNN's sizes are --units and --embedding-dim)"
        )
    if args.model == "transformer":
        defaults.update(RECIPE)
        if args.patience is not None:  # keeps the best epoch instead
            del defaults["average_checkpoints"]
    values = train_flags.config_values(
        args,
        defaults,
        (
            "units",
            "embedding_dim",
            *TRANSFORMER_SIZES,
            "max_length",
            "dropout",
            "attention_dropout",
            "decoder_layers",
            "tie_embeddings",
            "joint_vocabulary",
            "learning_rate_schedule",
            "warmup_steps",
            "label_smoothing",
            "average_checkpoints",
            "placeholders",
        ),
        model=args.model,
        cell=args.cell,
        attention=None if args.attention == "none" else args.attention,
    )
    if args.lowercase:
        values["lowercase"] = True
    if args.vocabulary_size is not None:
        values["source_vocabulary_size"] = args.vocabulary_size
        values["target_vocabulary_size"] = args.vocabulary_size
    if values.get("learning_rate_schedule") == "inverse_sqrt":
        if args.warmup_steps is None:
            values["warmup_steps"] = warmup_steps(
                train_pairs,
                values.get("batch_size", TranslationConfig.batch_size),
            )
    return TranslationConfig(**values)


def warmup_steps(train_pairs, batch_size):
    """`--warmup-steps`' default: the updates of one epoch over
    `train_pairs` pairs in batches of `batch_size` (None: not known yet),
    at most `MAX_WARMUP_STEPS`."""
    if train_pairs is None:
        return MAX_WARMUP_STEPS
    return max(1, min(MAX_WARMUP_STEPS, -(-train_pairs // batch_size)))


def _load_pairs(args):
    if not args.data:
        synthetic = make_synthetic_pairs(args.synthetic_pairs, seed=args.seed)
        return synthetic.pairs, synthetic
    if args.data.endswith(".jsonl"):
        pairs = data.load_jsonl_pairs(args.data)
    else:
        pairs = data.load_tsv_pairs(
            args.data,
            source_column=args.source_column,
            target_column=args.target_column,
            max_pairs=args.max_pairs,
        )
    return pairs[: args.max_pairs] if args.max_pairs else pairs, None


def _average_weights(translator, run_dir):
    """`--average-checkpoints N`: the model takes the mean weights of the
    last N epochs kept in the run folder; returns those epochs."""
    count = translator.config.average_checkpoints
    with run_folder.reported_errors("attention-zoo train translation"):
        weights, epochs = weight_averaging.averaged_weights(run_dir, count)
    if len(epochs) < 2:
        print(
            f"--average-checkpoints {count}: {len(epochs)} epoch kept in "
            f"{run_dir}/{weight_averaging.EPOCHS_DIR}, nothing to average"
        )
        return None
    translator.model.set_weights(weights)
    print(
        f"averaged the weights of epochs {epochs[0]}-{epochs[-1]} "
        f"(--average-checkpoints {count})"
    )
    return epochs


def _choose_search(translator, validation):
    """`--choose-search`: the search `choose_search` picks on the
    validation pairs, and its rows; prints them."""
    search, rows = choose_search(translator, validation)
    print(
        f"searches tried on {min(len(validation), MAX_PAIRS)} validation pairs:"
    )
    for row in rows:
        print(
            f"  beam {row['beam size']}, length penalty "
            f"{row['length penalty']}: BLEU {row['validation BLEU']:.2f}, "
            f"chrF {row['validation chrF']:.2f}"
        )
    print(
        f"chosen: beam {search.beam_size}, length penalty "
        f"{search.length_penalty}"
    )
    return search, rows


def main(argv=None):
    parser = flags.train_parser()
    with train_flags.usage_errors(parser):
        args, strategy = train_steps.parse_flags(parser, argv)
        _config(args, not args.data)  # a bad value, before any data is read
        pairs, synthetic = _load_pairs(args)
        train, validation, test = data.split_pairs(
            pairs,
            args.validation_fraction,
            args.test_fraction,
            seed=args.seed,
            group_by="source",
        )
        print(
            f"{len(pairs)} pairs: {len(train)} train, {len(validation)} "
            f"validation, {len(test)} test"
        )
        train_flags.check_fraction_splits(
            args,
            args.data or "the generated pairs",
            "pairs",
            (train, validation, test),
        )
        translator = train_steps.start_run(
            Translator,
            args,
            strategy,
            lambda: Translator(
                _config(args, synthetic is not None, len(train)),
                strategy=strategy,
            ),
            config=lambda: _config(args, synthetic is not None, len(train)),
        )
        direction.check_columns(args, translator, pairs)
    run_dir = args.run_dir
    averaged = translator.config.average_checkpoints
    kept = []
    if averaged > 1:
        kept = [weight_averaging.KeepEpochWeights(run_dir, averaged)]
    if not train_steps.fit_run(
        translator,
        args,
        strategy,
        train,
        validation,
        watched=validation,
        chief_callbacks=kept,
    ):
        return 0  # the chief evaluates, draws and exports
    epochs = _average_weights(translator, run_dir) if averaged > 1 else None

    print(f"parameters: {translator.model.count_params():,}")
    search, choice = train_steps.flag_search(args), None
    if args.choose_search:
        search, choice = _choose_search(translator, validation)
    scores = translator.evaluate(test, search=search)
    print(
        f"test BLEU {scores['bleu']:.2f} (lower-cased "
        f"{scores['bleu_lowercase']:.2f})  chrF {scores['chrf']:.2f} "
        f"(lower-cased {scores['chrf_lowercase']:.2f})  "
        f"({scores['examples']} pairs, beam {search.beam_size})\n"
        f"  sacreBLEU {scores['bleu_signature']}"
    )
    train_flags.note_few_examples("test", scores["examples"], "pairs")
    for (source, target), hypothesis in list(zip(test, scores["hypotheses"]))[
        :5
    ]:
        print(f"  {source}\n    -> {hypothesis}\n    (reference: {target})")

    sources = [source for source, _ in test[:200]]
    _, maps = translator.translate(sources, return_attention=True)
    if synthetic is not None:
        index = {pair: i for i, pair in enumerate(synthetic.pairs)}
        # Each synthetic word is one token and sources have no START, so
        # word positions are token positions.
        alignments = [synthetic.alignments[index[pair]] for pair in test[:200]]
        accuracy = alignment_accuracy(maps, alignments)
        print(f"attention argmax on the true source word: {accuracy:.1%}")
    example = translator.explain(sources[0])
    path = plot_attention(
        example["source_tokens"],
        example["target_tokens"],
        example["attention"],
        os.path.join(run_dir, "attention.png"),
        title=f"{sources[0]} -> {example['translation']}",
    )
    print(f"wrote {path}")
    if args.export:
        metrics = {k: v for k, v in scores.items() if k != "hypotheses"}
        metrics["beam_size"] = search.beam_size
        if epochs:
            metrics["averaged_epochs"] = epochs
        chosen = {}
        if choice is not None:
            # The export serves the chosen search; the metadata says why.
            metrics["search_choice"] = choice
            chosen = {"search": search}
        train_steps.export_next_version(
            translator, args, metrics, train, **chosen
        )
    train_steps.print_logs_line(args)
    return 0
