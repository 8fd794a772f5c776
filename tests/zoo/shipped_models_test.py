"""The shipped models of `saved_models/`: each serves its card's examples
in a fresh Python without Keras or this package, `from_preset` gives the
same in Python, the CLI finds them by name, and (slow) each re-scores its
card's figure on a fixed sample of its test split."""

import json
import os

import numpy as np
import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.common import zoo
from release import build_zoo
from tests.support.fresh_process import run_without_project

SHIPPED = {model.name: model for model in zoo.shipped_models()}
NAMES = sorted(build_zoo.RECIPES)
SHARED_DATA = build_zoo.SHARED_DATA


def _card(name):
    with open(os.path.join(SHIPPED[name].path, build_zoo.CARD_JSON)) as f:
        return json.load(f)


def test_every_recipe_is_shipped_with_its_card_and_sizes():
    assert sorted(SHIPPED) == NAMES
    total = 0
    for name in NAMES:
        model = SHIPPED[name]
        card = _card(name)
        assert card["application"] == model.application
        assert card["command"] == build_zoo.command(name)
        assert os.path.basename(model.version) == str(card["version"])
        with open(os.path.join(model.path, "README.md")) as f:
            text = f.read()
        assert card["command"] in text
        # The newest version is what is served and loaded; the older ones
        # stay (TF Serving's versions are immutable) and count in the total
        # (each translator holds two GRU versions and a Transformer's).
        assert _size(model.version) < 42e6, (name, _size(model.version))
        total += _size(model.path)
    assert total < 200e6


def _size(path):
    """The bytes of the files under `path`."""
    return sum(
        os.path.getsize(os.path.join(folder, file))
        for folder, _, files in os.walk(path)
        for file in files
    )


_SERVE_EXAMPLES = """
inputs = json.loads({inputs!r})
if "image" in inputs:  # file paths: the bytes are sent
    inputs["image"] = [open(path, "rb").read() for path in inputs["image"]]
model = tf.saved_model.load({path!r})
serve = model.signatures["serving_default"]
outputs = serve(**{{k: tf.constant(v) for k, v in inputs.items()}})
result = {{}}
for key in ("translation", "caption", "label"):
    if key in outputs:
        result[key] = [t.decode("utf-8") for t in outputs[key].numpy()]
if "probabilities" in outputs:
    result["probabilities"] = outputs["probabilities"].numpy().tolist()
emit(result)
"""


def _inputs(name):
    """The card's example inputs, images as their files' paths."""
    inputs = {}
    for example in build_zoo.RECIPES[name].examples:
        for key, value in example.items():
            if key == "image":
                value = os.path.join(build_zoo.EXAMPLES_DIR, value)
            inputs.setdefault(key, []).append(value)
    return inputs


def _check_outputs(card, result):
    for i, example in enumerate(card["examples"]):
        expected = example["outputs"]
        for key in ("translation", "caption", "label"):
            if key in expected:
                assert result[key][i] == expected[key], (key, i)
        if "probabilities" in expected:
            np.testing.assert_allclose(
                result["probabilities"][i], expected["probabilities"], atol=2e-4
            )


@pytest.mark.parametrize("name", NAMES)
def test_a_fresh_python_without_keras_serves_the_cards_examples(name):
    script = _SERVE_EXAMPLES.format(
        inputs=json.dumps(_inputs(name)), path=SHIPPED[name].version
    )
    _check_outputs(_card(name), run_without_project(script, timeout=600))


@pytest.mark.parametrize("name", NAMES)
def test_from_preset_gives_the_cards_examples_in_python(name):
    card = _card(name)
    bundle_class = registry.get(card["application"]).bundle_class()
    bundle = bundle_class.from_preset(name)
    recipe = build_zoo.RECIPES[name]
    columns = build_zoo.example_inputs(recipe)
    if card["application"] == "translation":
        produced = {"translation": bundle.translate(columns["text"])}
    elif card["application"] == "entailment":
        report = bundle.predict(columns["premise"], columns["hypothesis"])
        produced = {
            "label": list(report["labels"]),
            "probabilities": np.asarray(report["probabilities"]).tolist(),
        }
    else:
        from attention_zoo_apps.captioning.images import decode_image_bytes

        size = bundle.config.image_size
        images = np.stack(
            [
                decode_image_bytes(data, size).numpy()
                for data in columns["image"]
            ]
        )
        produced = {"caption": bundle.caption(images, beam_size=3)}
    _check_outputs(card, produced)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_model_rescores_its_card_on_the_test_sample(name):
    if not os.path.isdir(SHARED_DATA):
        pytest.skip(f"{SHARED_DATA} is absent")
    from attention_zoo.export import load_signature
    from attention_zoo_apps.common import startup

    card = _card(name)
    signature = startup.quietly(load_signature(SHIPPED[name].version))
    metric, score, count = build_zoo.score_sample(name, signature)
    assert (metric, count) == (card["sample_metric"], card["sample_size"])
    # The same export on the same examples: only float round-off apart.
    assert score == pytest.approx(card["sample_score"], abs=0.5)


def _headline(model):
    return registry.get(model.application).headline(model.metrics)


def test_models_lists_each_shipped_model_with_its_figure(capsys):
    from attention_zoo_apps import models_command

    assert models_command.main([]) == 0
    out = capsys.readouterr().out
    for name in NAMES:
        line = next(line for line in out.splitlines() if line.startswith(name))
        headline = _headline(SHIPPED[name])
        assert headline in line
        assert headline  # the metadata carries the figure


def test_infer_commands_take_a_shipped_models_name(capsys):
    from attention_zoo_apps.translation import infer

    name = "translation-spa-eng"
    card = _card(name)
    texts = [example["inputs"]["text"] for example in card["examples"]]
    assert infer.main([name, *texts]) == 0
    printed = capsys.readouterr().out.splitlines()
    expected = [
        example["outputs"]["translation"] for example in card["examples"]
    ]
    assert [line.split("\t")[-1] for line in printed[-len(texts) :]] == expected


def test_the_demo_opens_with_every_shipped_model(tmp_path, capsys):
    from attention_zoo_apps.demo import run

    assert run.main(["--only", "shipped", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "summary.json") as f:
        rows = json.load(f)["rows"]
    assert [row["application"] for row in rows] == NAMES
    for row in rows:
        assert not row.get("failed"), row
        assert row["pictures"]
        for path in row["pictures"]:
            with open(path, "rb") as f:
                assert f.read(4) == b"\x89PNG"


def test_fine_tuning_starts_far_below_a_fresh_model():
    """`--init-from` / `from_preset` start from the shipped weights: on the
    card's example pairs the first batch's loss is a small share of a
    fresh model's with the same config and vocabularies."""
    from attention_zoo_apps.translation.translator import Translator

    card = _card("translation-spa-eng")
    pairs = [
        (example["inputs"]["text"], example["outputs"]["translation"])
        for example in card["examples"]
    ]
    shipped = Translator.from_preset("translation-spa-eng")
    fresh = Translator(
        shipped.config,
        source_tokenizer=shipped.source_tokenizer,
        target_tokenizer=shipped.target_tokenizer,
    )
    fresh.ensure_model()

    def loss(translator):
        dataset = translator.validation_dataset(pairs)
        return translator.model.evaluate(dataset, verbose=0, return_dict=True)[
            "loss"
        ]

    # Measured: 0.09 against 8.4 (ln 8,000 is 9.0).
    assert loss(shipped) < 0.25 * loss(fresh)
