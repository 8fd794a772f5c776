"""The captioner with EfficientNet-Lite0: pretrained weights frozen by
default, the feature grid by stage, training on features computed once
(the same weights as on images), and the CLI's flags (the guides'
`train captioning --encoder efficientnet_lite0 --encoder-weights imagenet`
lines run through export in `tests/docs_train_commands_test.py`)."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo_apps import cli
from attention_zoo_apps.captioning import encoders
from attention_zoo_apps.captioning.captioner import Captioner
from attention_zoo_apps.captioning.config import CaptioningConfig
from attention_zoo_apps.captioning.model import build_captioner
from attention_zoo_apps.captioning.model import build_encoder
from attention_zoo_apps.captioning.model import decoder_model
from attention_zoo_apps.captioning.model import encoder_is_trainable
from attention_zoo_apps.captioning.model import encoder_model
from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes

NPZ = "imagenet-efficientnet-lite0/efficientnet_lite0_state_dict.npz"
SMALL = dict(
    image_size=64,
    embedding_dim=8,
    units=16,
    vocabulary_size=60,
    max_length=8,
    batch_size=8,
    dropout=0.0,
)


@pytest.fixture(scope="module")
def shapes():
    return make_synthetic_shapes(24, image_size=64, seed=0)


@pytest.fixture
def npz_path(shared_data):
    return shared_data / NPZ


def _trainable_count(model):
    return len(model.trainable_weights)


def test_pretrained_weights_are_frozen_unless_asked(npz_path):
    assert encoder_is_trainable(None, None)
    assert not encoder_is_trainable(None, "imagenet")
    assert encoder_is_trainable(True, "imagenet")
    assert not encoder_is_trainable(False, None)
    frozen = build_encoder("efficientnet_lite0", 64, str(npz_path))
    assert _trainable_count(frozen) == 0
    tuned = build_encoder("efficientnet_lite0", 64, str(npz_path), True)
    assert _trainable_count(tuned) > 0
    # The ImageNet weights are the ones loaded: the same features as the
    # port on 0-255 pixels, from [0, 1] images.
    images = np.random.default_rng(0).random((2, 64, 64, 3), "float32")
    reference = encoders.efficientnet_lite0(weights=npz_path)
    np.testing.assert_allclose(
        frozen(images), reference(images * 255.0), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "stage, grid", [(None, (2, 2, 1280)), (5, (4, 4, 112)), (4, (4, 4, 80))]
)
def test_the_stage_picks_the_feature_grid(stage, grid):
    model = build_captioner(
        30, encoder="efficientnet_lite0", image_size=64, encoder_stage=stage
    )
    assert tuple(model.get_layer("annotations").input.shape[1:]) == grid


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(encoder="small_cnn", encoder_stage=5), "encoder_stage"),
        (dict(encoder="small_cnn", encoder_weights="w.h5"), "from scratch"),
        (dict(encoder="ResNet50", encoder_weights="imagenet"), "downloaded"),
        (dict(encoder="efficientnet_lite0", encoder_stage=9), "output_stage"),
    ],
)
def test_bad_encoder_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_encoder(image_size=64, **kwargs)


def test_cached_features_give_the_decoder_the_same_logits(shapes):
    model = build_captioner(
        30, encoder="efficientnet_lite0", image_size=64, encoder_stage=5
    )
    head = decoder_model(model)
    assert [v.path for v in head.trainable_variables] == [
        v.path for v in model.trainable_variables
    ][-len(head.trainable_variables) :]
    ids = tf.constant([[1, 5, 6, 0]] * 3, "int32")
    images = tf.constant(shapes.images[:3])
    features = encoder_model(model)(images)
    np.testing.assert_allclose(
        head({"features": features, "caption_in": ids}),
        model({"image": images, "caption_in": ids}),
        rtol=1e-5,
        atol=1e-6,
    )


def _fit(config, shapes, cache, monkeypatch, **kwargs):
    # No validation split: it changes no weight (validation on cached
    # features runs in the checkpointed run's test below).
    keras.utils.set_random_seed(0)
    captioner = Captioner(config)
    if not cache:
        monkeypatch.setattr(captioner, "caches_features", lambda: False)
    captioner.fit(shapes.images[:16], shapes.captions[:16], verbose=0, **kwargs)
    return captioner


@pytest.mark.slow  # the quick twin: ..._give_the_decoder_the_same_logits
def test_training_on_cached_features_trains_the_same_weights(
    shapes, monkeypatch
):
    config = CaptioningConfig(
        encoder="small_cnn", trainable_encoder=False, epochs=2, **SMALL
    )
    cached = _fit(config, shapes, True, monkeypatch)
    direct = _fit(config, shapes, False, monkeypatch)
    assert cached.caches_features()
    assert cached.training_model() is not cached.model
    assert direct.training_model() is direct.model
    assert cached.training_model().input["features"].shape[1:] == (8, 8, 128)
    for a, b in zip(cached.model.weights, direct.model.weights):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=a.path)
    # What changed is the decoder; the frozen encoder kept its weights.
    fresh = Captioner(config)
    keras.utils.set_random_seed(0)
    fresh.ensure_tokenizer(shapes.captions[:16])
    fresh.ensure_model()
    changed = [
        a.path
        for a, b in zip(cached.model.weights, fresh.model.weights)
        if not np.allclose(a, b)
    ]
    assert changed and all(path.startswith("decoder/") for path in changed)


def test_augmented_or_trained_encoders_see_the_images():
    frozen = dict(SMALL, encoder="small_cnn", trainable_encoder=False)
    assert not Captioner(
        CaptioningConfig(**frozen, augment=True)
    ).caches_features()
    trained = dict(frozen, trainable_encoder=None)
    assert not Captioner(CaptioningConfig(**trained)).caches_features()
    with pytest.raises(ValueError, match="augment"):
        Captioner(CaptioningConfig(**frozen)).dataset(
            np.zeros((1, 64, 64, 3)), ["a"], augment=True, features=True
        )


class _Interrupt(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            raise KeyboardInterrupt


@pytest.mark.slow
def test_a_cached_run_checkpoints_the_whole_captioner_and_resumes(
    shapes, tmp_path
):
    config = CaptioningConfig(
        encoder="small_cnn", trainable_encoder=False, epochs=3, **SMALL
    )
    run = tmp_path / "run"
    data = (shapes.images[:16], shapes.captions[:16])
    validation = (shapes.images[16:], shapes.captions[16:])
    captioner = Captioner(config)
    with pytest.raises(KeyboardInterrupt):
        captioner.fit(
            *data,
            validation=validation,
            checkpoint_dir=str(run),
            callbacks=[_Interrupt()],
            verbose=0,
            patience=2,
        )
    # The epoch's checkpoint is the whole captioner's, optimizer included.
    saved = Captioner.load(str(run))
    ids = tf.constant([[1, 5, 6, 0]], "int32")
    image = tf.constant(shapes.images[:1])
    np.testing.assert_allclose(
        saved.model({"image": image, "caption_in": ids}),
        captioner.model({"image": image, "caption_in": ids}),
        atol=1e-6,
    )
    resumed = Captioner.load_assets(str(run))
    history = resumed.fit(
        *data,
        validation=validation,
        checkpoint_dir=str(run),
        verbose=0,
        patience=2,
    )
    assert len(history.history["loss"]) == 2  # epochs 2 and 3
    progress = json.loads((run / "progress.json").read_text())
    assert progress["epochs"] == 3
    final = Captioner.load(str(run))
    np.testing.assert_allclose(
        final.model({"image": image, "caption_in": ids}),
        resumed.model({"image": image, "caption_in": ids}),
        atol=1e-6,
    )


@pytest.mark.slow
def test_a_restored_run_does_not_read_the_pretrained_weights(
    shapes, tmp_path, monkeypatch
):
    config = CaptioningConfig(
        encoder="efficientnet_lite0",
        encoder_weights=str(tmp_path / "gone.npz"),
        encoder_stage=4,
        epochs=1,
        **SMALL,
    )
    captioner = Captioner(config)
    with pytest.raises(FileNotFoundError, match="gone.npz"):
        captioner.fit(shapes.images[:8], shapes.captions[:8], verbose=0)
    config = config.replace(encoder_weights=None, trainable_encoder=False)
    captioner = Captioner(config)
    captioner.fit(shapes.images[:8], shapes.captions[:8], verbose=0)
    run = tmp_path / "run"
    captioner.save(str(run))
    # A run trained from a weights file no longer there still loads.
    saved = json.loads((run / "config.json").read_text())
    saved["encoder_weights"] = str(tmp_path / "gone.npz")
    (run / "config.json").write_text(json.dumps(saved))
    loaded = Captioner.load(str(run))
    assert loaded.caption(shapes.images[:2], beam_size=1) == captioner.caption(
        shapes.images[:2], beam_size=1
    )


def test_cli_refuses_freezing_and_fine_tuning_at_once(capsys):
    with pytest.raises(SystemExit) as raised:
        cli.main(
            [
                "train",
                "captioning",
                "--encoder",
                "efficientnet_lite0",
                "--freeze-encoder",
                "--fine-tune-encoder",
            ]
        )
    assert raised.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
