"""`attention-zoo train captioning` and `attention-zoo caption`."""

import contextlib
import io
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import load_signature
from attention_zoo_apps import cli
from attention_zoo_apps.captioning import overlays
from attention_zoo_apps.captioning.captioner import Captioner
from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes
from tests.support import png_images
from tests.support import resume_checks

TINY = [
    "--image-size",
    "32",
    "--embedding-dim",
    "8",
    "--units",
    "16",
    "--vocabulary-size",
    "100",
    "--max-length",
    "10",
    "--batch-size",
    "16",
]


def _png_shape(path):
    """`(height, width)` of a PNG file, read back with TensorFlow."""
    return tuple(tf.io.decode_png(path.read_bytes()).shape[:2])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny run on generated shapes with --export: `(folder, output)`."""
    tmp = tmp_path_factory.mktemp("captioning")
    keras.utils.set_random_seed(0)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = cli.main(
            [
                "train",
                "captioning",
                "--synthetic-images",
                "80",
                "--epochs",
                "1",
                *TINY,
                "--beam-size",
                "2",
                "--no-tensorboard",
                "--run-dir",
                str(tmp / "run"),
                "--export",
                str(tmp / "saved_models" / "captioning"),
            ]
        )
    assert code == 0
    return tmp, output.getvalue()


def test_train_on_shapes_reports_metrics_and_exports(trained):
    tmp, out = trained
    assert "72 train, 8 validation, 8 test images" in out
    assert "5/5" in out  # the progress bar: 72 images, batches of 16
    line = next(s for s in out.splitlines() if s.startswith("test BLEU-1"))
    scores = [float(line.split(f"BLEU-{n} ")[1].split()[0]) for n in (1, 4)]
    assert 0.0 <= scores[1] <= scores[0] <= 100.0
    assert "CIDEr" in line and "exact match" in line and "beam 2" in line
    assert out.count("(reference: a ") == 5  # the shapes' captions
    assert "attention localisation:" in out and "chance" in out
    # The export's metadata holds what was printed.
    printed = next(s for s in out.splitlines() if "localisation:" in s)
    metrics = json.loads(
        (
            tmp / "saved_models" / "captioning" / "1" / "metadata.json"
        ).read_text()
    )["metrics"]
    assert printed.split()[2] == f"{metrics['attention_localisation']:.1%}"
    assert printed.split()[4] == str(metrics["localised_words"])
    assert f"(chance {metrics['localisation_chance']:.1%})" in printed
    run = tmp / "run"
    assert f"wrote {run / 'attention.png'}" in out
    assert (run / "model.weights.h5").exists()
    config = json.loads((run / "config.json").read_text())
    assert config["image_size"] == 32 and config["units"] == 16
    export = tmp / "saved_models" / "captioning"
    assert f"exported {export / '1'}" in out
    assert sorted(p.name for p in export.iterdir()) == ["1"]
    assert (export / "1" / "saved_model.pb").exists()
    # The overlay has one panel per generated word of the first test image.
    captioner = Captioner.load(run)
    test = make_synthetic_shapes(1, image_size=32, seed=1)
    _, maps, tokens = captioner.caption(
        test.images, beam_size=2, return_attention=True
    )
    words, _ = overlays.word_heatmaps(tokens[0], maps[0])
    assert _png_shape(run / "attention.png") == overlays.overlay_size(
        len(words)
    )


def test_caption_prints_captions_and_writes_one_figure_per_image(
    trained, tmp_path, capsys
):
    export = trained[0] / "saved_models" / "captioning"
    shapes = make_synthetic_shapes(2, image_size=48, seed=9)
    paths = []
    for index, image in enumerate(shapes.images):
        paths.append(tmp_path / f"shape{index}.png")
        paths[-1].write_bytes(png_images.png(image))
    plot = tmp_path / "figures" / "out.png"
    argv = ["caption", str(export), *map(str, paths), "--plot", str(plot)]
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    # The same captions, tokens and heatmaps as the SavedModel's own.
    served = load_signature(str(export))(
        image=tf.constant([p.read_bytes() for p in paths])
    )
    captions = [c.decode() for c in served["caption"].numpy()]
    assert lines[:2] == [f"{p}\t{c}" for p, c in zip(paths, captions)]
    figures = [plot, tmp_path / "figures" / "out-2.png"]
    assert lines[2:] == [f"wrote {f}" for f in figures]
    for row, figure in enumerate(figures):
        tokens = [t.decode() for t in served["tokens"][row].numpy()]
        words, maps = overlays.word_heatmaps(
            tokens, served["attention"][row].numpy()
        )
        # The tokens glue back into the caption; one panel per word.
        assert " ".join(words).replace(" ##", "") == captions[row]
        np.testing.assert_allclose(maps.sum((1, 2)), 1.0, atol=1e-4)
        assert _png_shape(figure) == overlays.overlay_size(len(words))


def test_caption_names_a_corrupt_or_missing_image(trained, tmp_path, capsys):
    export = trained[0] / "saved_models" / "captioning"
    good = tmp_path / "good.png"
    good.write_bytes(png_images.png(np.zeros((16, 16, 3))))
    corrupt = tmp_path / "corrupt.jpg"
    corrupt.write_bytes(b"\xff\xd8 not really a jpeg")
    missing = tmp_path / "missing.png"
    for bad in (corrupt, missing):
        code = cli.main(["caption", str(export), str(good), str(bad)])
        assert code == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert str(bad) in captured.err and str(good) not in captured.err
        assert "Traceback" not in captured.err


def test_caption_names_a_folder_without_a_model(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["caption", str(tmp_path), "image.png"])
    assert "No SavedModel" in capsys.readouterr().err


def _write_coco(folder, shapes, missing_name, corrupt_name):
    """A COCO-layout folder: `annotations/captions_mini2017.json` and the
    images in `mini2017/`, two captions each, one image named but absent
    and one that does not decode."""
    images_dir = folder / "mini2017"
    images_dir.mkdir(parents=True)
    (folder / "annotations").mkdir()
    images, annotations = [], []
    for index, (image, caption) in enumerate(
        zip(shapes.images, shapes.captions)
    ):
        name = f"{index:04d}.png"
        (images_dir / name).write_bytes(png_images.png(image))
        images.append({"id": index, "file_name": name})
        for text in (caption, caption.replace(" a ", " one ")):
            annotations.append({"image_id": index, "caption": text})
    (images_dir / corrupt_name).write_bytes(b"GIF89a broken")
    for offset, name in enumerate((missing_name, corrupt_name)):
        image_id = len(shapes) + offset
        images.append({"id": image_id, "file_name": name})
        annotations.append({"image_id": image_id, "caption": "a thing"})
    document = {"images": images, "annotations": annotations}
    (folder / "annotations" / "captions_mini2017.json").write_text(
        json.dumps(document), encoding="utf-8"
    )


# Slow tier; the quick twin reads COCO's layout without training
# (caption_layout_test).
@pytest.mark.slow
def test_train_on_a_coco_folder(tmp_path, capsys):
    shapes = make_synthetic_shapes(30, image_size=40, seed=2)
    coco = tmp_path / "coco"
    _write_coco(coco, shapes, "absent.png", "broken.gif")
    code = cli.main(
        [
            "train",
            "captioning",
            "--data",
            str(coco),
            "--format",
            "coco",
            "--epochs",
            "1",
            "--attention-query",
            "state_and_word",
            "--prediction",
            "latent",
            "--augment",
            *TINY,
            "--beam-size",
            "1",
            "--no-tensorboard",
            "--run-dir",
            str(tmp_path / "run"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    missing = f"skipped 1 images the annotations name but {coco / 'mini2017'}"
    assert missing in out
    assert f"skipped {coco / 'mini2017' / 'broken.gif'}: " in out
    # 31 of the 32 images are there; the broken one is dropped from
    # whichever split it fell in.
    line = next(s for s in out.splitlines() if " train, " in s)
    numbers = [int(w) for w in line.replace("(", " ").split() if w.isdigit()]
    assert sum(numbers[:3]) == 30 and numbers[2] >= 2, line
    assert numbers[3] == 2 * numbers[0], line  # two captions per image
    assert "test BLEU-1" in out and "(reference: " in out
    assert "attention localisation" not in out  # no boxes for real data
    assert (tmp_path / "run" / "attention.png").exists()
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["attention_query"] == "state_and_word"
    decoder = Captioner.load(tmp_path / "run").model.get_layer("decoder")
    assert decoder.query == "state_and_word"
    assert config["prediction"] == decoder.prediction == "latent"
    assert config["augment"] is True


def test_train_names_a_data_layout_it_cannot_find(tmp_path, capsys):
    empty = tmp_path / "empty"
    (empty / "images").mkdir(parents=True)
    run = ["--no-tensorboard", "--run-dir", str(tmp_path / "run"), *TINY]
    for format, problem in (
        ("auto", "no Flickr8k token file"),
        ("coco", "expected one captions_<split>.json"),
    ):
        argv = ["train", "captioning", "--data", str(empty), *run]
        with pytest.raises(SystemExit) as exit_info:
            cli.main([*argv, "--format", format])
        assert exit_info.value.code == 2  # a usage error
        message = capsys.readouterr().err.splitlines()[-1]
        assert message.startswith(
            f"attention-zoo train captioning: error: {empty}: "
        )
        assert problem in message


def test_shapes_default_to_latent_prediction_and_the_baseline_to_deep():
    from attention_zoo_apps.captioning import flags
    from attention_zoo_apps.captioning import train

    parser = flags.train_parser()
    assert train._config(parser.parse_args([]), True).prediction == "latent"
    assert train._config(parser.parse_args([]), False).prediction == "deep"
    baseline = train._config(parser.parse_args(["--no-attention"]), True)
    assert (baseline.attention, baseline.prediction) == (None, "deep")
    with pytest.raises(ValueError, match="prediction='latent'"):
        train._config(
            parser.parse_args(["--no-attention", "--prediction", "latent"]),
            False,
        )


def test_attention_mode_flags():
    from attention_zoo_apps.captioning import flags
    from attention_zoo_apps.captioning import train

    parser = flags.train_parser()
    assert train._config(parser.parse_args([]), True).attention_mode == "soft"
    hard = train._config(
        parser.parse_args(
            [
                "--attention-mode",
                "hard",
                "--hard-inference",
                "expectation",
                "--entropy-weight",
                "0.01",
                "--reinforce-weight",
                "0.5",
            ]
        ),
        True,
    )
    assert (
        hard.attention_mode,
        hard.hard_inference,
        hard.entropy_weight,
        hard.reinforce_weight,
    ) == ("hard", "expectation", 0.01, 0.5)
    with pytest.raises(ValueError, match="attention_mode='hard'"):
        train._config(
            parser.parse_args(["--no-attention", "--attention-mode", "hard"]),
            True,
        )


@pytest.mark.slow
def test_hard_attention_trains_under_mirrored(tmp_path):
    """Two replicas: each keeps its REINFORCE baseline (on read), so no
    sync inside the step drops a replica's added loss (it did with a
    mirrored baseline: the attention's gradients were missing)."""
    from tests.support import distributed_runs

    # fmt: off
    result = distributed_runs.run(
        "cli", "2", "train", "captioning", "--attention-mode", "hard",
        "--strategy", "mirrored", "--synthetic-images", "64", "--epochs",
        "1", *TINY, "--beam-size", "1", "--no-tensorboard",
        "--run-dir", str(tmp_path / "run"),
    )
    # fmt: on
    assert result.returncode == 0, result.stderr[-2000:]
    assert "exact match" in result.stdout


def test_augment_is_for_photographs_not_the_generated_shapes():
    from attention_zoo_apps.captioning import flags
    from attention_zoo_apps.captioning import train

    parser = flags.train_parser()
    assert not train._config(parser.parse_args([]), False).augment
    assert train._config(parser.parse_args(["--augment"]), False).augment
    with pytest.raises(ValueError, match="left of"):
        train._config(parser.parse_args(["--augment"]), True)


@pytest.mark.slow
def test_restarted_run_resumes_after_an_interrupt(tmp_path, monkeypatch):
    argv = [
        "train",
        "captioning",
        "--synthetic-images",
        "40",
        "--epochs",
        "2",
        *TINY,
        "--beam-size",
        "1",
        "--no-tensorboard",
        "--run-dir",
        str(tmp_path / "run"),
    ]
    resume_checks.check_cli_resumes(
        monkeypatch, Captioner, argv, tmp_path / "run"
    )


def test_caption_help_lists_its_flags(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["caption", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: attention-zoo caption") and "--plot" in out
