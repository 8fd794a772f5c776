"""`attention-zoo train translation` and `attention-zoo translate`."""

import json
import re

import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.common import weight_averaging
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator


@pytest.mark.slow
def test_train_on_synthetic_pair_exports_and_translates(tmp_path, capsys):
    run_dir = tmp_path / "run"
    export_dir = tmp_path / "saved_models" / "translation"
    code = cli.main(
        [
            "train",
            "translation",
            "--synthetic-pairs",
            "600",
            "--epochs",
            "2",
            "--units",
            "32",
            "--embedding-dim",
            "16",
            "--no-tensorboard",
            "--run-dir",
            str(run_dir),
            "--export",
            str(export_dir),
            "--choose-search",
            "--model",
            "transformer",  # the recipe: averaging 2 epochs among it
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "test BLEU" in out and "chrF" in out
    # The search chosen on validation decodes the test split and is
    # the export's, its choice in the metadata.
    chosen = re.search(r"chosen: beam (\d+), length penalty ([\d.]+)", out)
    beam, penalty = int(chosen[1]), float(chosen[2])
    assert f"pairs, beam {beam})" in out
    metadata = json.loads((export_dir / "1" / "metadata.json").read_text())
    assert metadata["decoding"]["beam_size"] == beam
    assert metadata["decoding"]["length_penalty"] == penalty
    tried = metadata["metrics"]["search_choice"]
    assert len(tried) == 4
    best = max(row["validation BLEU"] for row in tried)
    assert {"beam size": beam, "length penalty": penalty} in [
        {k: row[k] for k in ("beam size", "length penalty")}
        for row in tried
        if row["validation BLEU"] == best
    ]
    assert "attention argmax on the true source word" in out
    assert (run_dir / "attention.png").read_bytes().startswith(b"\x89PNG")
    assert (run_dir / "model.weights.h5").exists()
    assert (export_dir / "1" / "saved_model.pb").exists()
    # The export holds the mean of the two epochs' weights (the
    # Transformer's default), and copies with placeholders.
    config = Translator.from_export(str(export_dir / "1")).config
    assert config.placeholders == ("numbers", "names", "unknown")
    assert config.label_smoothing == 0.1
    assert "averaged the weights of epochs 1-2" in out
    mean, epochs = weight_averaging.averaged_weights(str(run_dir), 2)
    exported = Translator.from_export(str(export_dir / "1")).model
    for found, wanted in zip(exported.get_weights(), mean, strict=True):
        np.testing.assert_allclose(found, wanted, rtol=1e-6)
    assert metadata["metrics"]["averaged_epochs"] == epochs == [1, 2]

    source = make_synthetic_pairs(1, seed=5).pairs[0][0]
    assert cli.main(["translate", str(export_dir), source]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith(source + "\t")


def test_translate_names_a_folder_without_a_model(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["translate", str(tmp_path), "hello"])
    assert "No SavedModel" in capsys.readouterr().err


def test_train_reports_a_bad_data_line(tmp_path, capsys):
    bad = tmp_path / "pairs.tsv"
    bad.write_text("hello\thola\nno tab here\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(
            [
                "train",
                "translation",
                "--data",
                str(bad),
                "--no-tensorboard",
                "--run-dir",
                str(tmp_path / "run"),
            ]
        )
    assert exit_info.value.code == 2  # a usage error, not a traceback
    assert "pairs.tsv:2" in capsys.readouterr().err.splitlines()[-1]


def test_real_text_keeps_its_case_unless_lowercase_is_asked():
    from attention_zoo_apps.translation import flags
    from attention_zoo_apps.translation import train

    for argv, lowercase in (([], False), (["--lowercase"], True)):
        args = flags.train_parser().parse_args(argv)
        assert train._config(args, synthetic=False).lowercase is lowercase


@pytest.mark.parametrize("attention", ["monotonic", "local"])
def test_attention_flag_takes_monotonic_and_local(attention):
    from attention_zoo_apps.translation import flags
    from attention_zoo_apps.translation import train

    args = flags.train_parser().parse_args(["--attention", attention])
    assert train._config(args, synthetic=True).attention == attention
