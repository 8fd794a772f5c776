"""Captioner end to end on generated shapes: fit, caption, evaluate,
save/load, export."""

import json

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import registry
from attention_zoo_apps.captioning.captioner import Captioner
from attention_zoo_apps.captioning.config import CaptioningConfig
from tests.support import fresh_process
from tests.support import png_images

TINY = registry.get("captioning").tiny_config()


def test_config_checks():
    with pytest.raises(ValueError, match="attention"):
        CaptioningConfig(attention="cosine")
    with pytest.raises(ValueError, match="max_length"):
        CaptioningConfig(max_length=0)
    with pytest.raises(ValueError, match="attention_query"):
        CaptioningConfig(attention_query="word")
    with pytest.raises(ValueError, match="prediction"):
        CaptioningConfig(prediction="soft")
    with pytest.raises(ValueError, match="prediction='latent'"):
        CaptioningConfig(attention=None, prediction="latent")
    with pytest.raises(ValueError, match="attention_mode"):
        CaptioningConfig(attention_mode="sampled")
    with pytest.raises(ValueError, match="attention=None"):
        CaptioningConfig(attention=None, attention_mode="hard")
    with pytest.raises(ValueError, match="entropy_weight"):
        CaptioningConfig(entropy_weight=-1.0)
    config = TINY.replace(attention=None)
    assert CaptioningConfig.from_json(config.to_json()) == config


def test_configs_saved_before_hard_attention_load_as_soft():
    values = json.loads(TINY.to_json())
    for key in (
        "attention_mode",
        "hard_inference",
        "reinforce_weight",
        "entropy_weight",
        "semi_sampling",
    ):
        del values[key]
    config = CaptioningConfig.from_json(json.dumps(values))
    assert config == TINY and config.attention_mode == "soft"


def test_caption_returns_strings_and_heatmaps(captioner, shapes):
    texts, maps, tokens = captioner.caption(
        shapes.images[40:43], beam_size=1, return_attention=True
    )
    assert len(texts) == len(maps) == len(tokens) == 3
    for heatmaps, words in zip(maps, tokens):
        assert heatmaps.shape == (len(words), 8, 8)
        np.testing.assert_allclose(heatmaps.sum((1, 2)), 1.0, atol=1e-5)
    # One image alone gets the caption it gets in a batch.
    assert captioner.caption(shapes.images[41:42], beam_size=1) == texts[1:2]


def test_num_results_gives_the_best_beams_with_heatmaps(captioner, shapes):
    images = shapes.images[40:42]
    best = captioner.caption(images, beam_size=3)
    texts, maps, tokens, scores = captioner.caption(
        images,
        beam_size=3,
        num_results=2,
        return_attention=True,
        return_scores=True,
    )
    assert [t[0] for t in texts] == best
    for image in range(2):
        assert len(texts[image]) == len(maps[image]) == len(scores[image]) == 2
        for heatmaps, words in zip(maps[image], tokens[image]):
            assert heatmaps.shape == (len(words), 8, 8)
    with pytest.raises(ValueError, match="num_results=4, beam_size=3"):
        captioner.caption(images, num_results=4)


def test_sampling_repeats_per_seed_and_cold_sampling_is_greedy(
    captioner, shapes
):
    images = shapes.images[40:44]
    sampled = captioner.caption(images, sampling="top_k", top_k=3, seed=1)
    assert captioner.caption(images, sampling="top_k", top_k=3, seed=1) == (
        sampled
    )
    cold = captioner.caption(images, sampling="temperature", temperature=0)
    assert cold == captioner.caption(images, beam_size=1)


def test_evaluate_reports_bleu_and_cider(captioner, shapes):
    scores = captioner.evaluate(shapes.images[40:], shapes.captions[40:])
    for key in ("bleu_1", "bleu_2", "bleu_3", "bleu_4"):
        assert 0.0 <= scores[key] <= 100.0
    assert scores["cider"] >= 0.0 and len(scores["hypotheses"]) == 8


def test_bad_images_give_clear_errors(captioner):
    with pytest.raises(ValueError, match=r"\(N, 32, 32, 3\)"):
        captioner.caption(np.zeros((2, 64, 64, 3), "float32"))
    with pytest.raises(ValueError, match="caption entries"):
        captioner.dataset(np.zeros((2, 32, 32, 3), "float32"), ["a"])


def test_save_and_load_caption_alike(captioner, shapes, tmp_path):
    captioner.save(tmp_path)
    loaded = Captioner.load(tmp_path)
    images = shapes.images[40:44]
    assert loaded.caption(images) == captioner.caption(images)


@pytest.fixture(scope="module")
def hard_captioner(shapes):
    """`attention_mode="hard"`, trained by REINFORCE (once per module)."""
    captioner = Captioner(
        TINY.replace(attention_mode="hard", epochs=4, learning_rate=1e-2)
    )
    captioner.fit(shapes.images[:40], shapes.captions[:40], verbose=0)
    return captioner


@pytest.fixture(scope="module")
def exports(captioner, hard_captioner, shapes, tmp_path_factory):
    """The tiny and the hard-attention captioners exported, and what one
    fresh process without the project answers from both:
    name -> `(path, served)`."""
    return export_and_serve(
        {"tiny": captioner, "hard": hard_captioner},
        shapes,
        tmp_path_factory.mktemp("exports"),
    )


def test_export_serves_the_same_captions_without_the_project(
    captioner, shapes, exports
):
    check_served(captioner, shapes, *exports["tiny"])


def test_the_export_module_returns_the_n_best_with_their_scores(
    captioner, shapes
):
    from attention_zoo_apps.captioning.export import CaptioningServingModule

    encoded, pixels = png_images.pngs_and_pixels(shapes.images[40:43])
    module = CaptioningServingModule(captioner, beam_size=3, num_results=2)
    served = module.serve(tf.constant(encoded))
    n_best, scores = captioner.caption(
        pixels, beam_size=3, num_results=2, return_scores=True
    )
    got = [
        [c.decode("utf-8") for c in row] for row in served["captions"].numpy()
    ]
    assert got == n_best
    np.testing.assert_allclose(served["scores"].numpy(), scores, atol=1e-4)
    assert [row[0] for row in got] == [
        c.decode("utf-8") for c in served["caption"].numpy()
    ]
    assert served["attention"].shape[:2] == (3, TINY.max_length)


@pytest.mark.slow
def test_latent_prediction_trains_and_exports(shapes, tmp_path):
    """`prediction="latent"` carries the context in the decoding state;
    the compiled search and the SavedModel handle it alike."""
    # Trained past the near-uniform mixture of the first epoch, whose ties
    # (log-probabilities within 1e-5) could flip between two compilations.
    captioner = Captioner(
        TINY.replace(prediction="latent", epochs=6, learning_rate=1e-2)
    )
    captioner.fit(shapes.images[:40], shapes.captions[:40], verbose=0)
    assert captioner.model.get_layer("decoder").prediction == "latent"
    check_export(captioner, shapes, tmp_path)


def test_hard_attention_trains_and_exports(
    hard_captioner, shapes, exports, tmp_path
):
    """`attention_mode="hard"`: trained by REINFORCE; decoding and the
    SavedModel read the most likely cell, one per word."""
    captioner = hard_captioner
    decoder = captioner.model.get_layer("decoder")
    assert decoder.attention_mode == "hard"
    assert float(decoder.reward_baseline) < 0  # moved towards R
    _, maps, _ = captioner.caption(
        shapes.images[40:42], beam_size=1, return_attention=True
    )
    for heatmaps in maps:
        assert set(np.unique(heatmaps)) == {0.0, 1.0}
        np.testing.assert_array_equal(heatmaps.sum((1, 2)), 1.0)
    captioner.save(tmp_path / "bundle")
    loaded = Captioner.load(tmp_path / "bundle")
    assert float(loaded.model.get_layer("decoder").reward_baseline) == (
        float(decoder.reward_baseline)
    )
    images = shapes.images[40:44]
    assert loaded.caption(images) == captioner.caption(images)
    check_served(captioner, shapes, *exports["hard"])


def check_export(captioner, shapes, tmp_path):
    check_served(
        captioner,
        shapes,
        *export_and_serve({"one": captioner}, shapes, tmp_path)["one"],
    )


def export_and_serve(captioners, shapes, tmp_path):
    """Exports each captioner of `captioners` (name -> captioner); one
    fresh process serves them all and looks their ops up. Returns name ->
    `(path, what that process answered from the export)`."""
    encoded, _ = png_images.pngs_and_pixels(shapes.images[40:43])
    jobs = []
    for name, captioner in captioners.items():
        path = str(tmp_path / name / "captioning" / "1")
        captioner.export(path)
        jobs.append((name, path, sorted(fresh_process.saved_model_ops(path))))
    served = fresh_process.run_without_project(
        f"""
results = {{}}
for name, path, ops in {jobs!r}:
    model = tf.saved_model.load(path)
    serve = model.signatures["serving_default"]
    out = serve(image=tf.constant({encoded!r}))
    results[name] = {{
        "caption": [t.decode() for t in out["caption"].numpy()],
        "attention": out["attention"].numpy().tolist(),
        "inputs": sorted(serve.structured_input_signature[1]),
        "unknown_ops": unregistered_ops(ops),
    }}
emit(results)
"""
    )
    return {name: (path, served[name]) for name, path, _ in jobs}


def check_served(captioner, shapes, path, served):
    """`served` (from `export_and_serve`) is what `captioner` captions;
    the export at `path` refuses what is not an image."""
    _, pixels = png_images.pngs_and_pixels(shapes.images[40:43])
    expected, maps, _ = captioner.caption(pixels, return_attention=True)
    assert served["inputs"] == ["image"]
    assert served["caption"] == expected
    attention = np.array(served["attention"])
    assert attention.shape == (3, TINY.max_length, 8, 8)
    for row, heatmaps in enumerate(maps):
        np.testing.assert_allclose(
            attention[row, : len(heatmaps)], heatmaps, atol=1e-4
        )
    assert not served["unknown_ops"], served["unknown_ops"]
    serve = tf.saved_model.load(path).signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError):
        serve(image=tf.constant([b"not an image"]))
