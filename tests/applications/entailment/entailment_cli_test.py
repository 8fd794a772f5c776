"""`attention-zoo train entailment` and `attention-zoo predict`."""

import gzip

import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.synthetic import make_synthetic_entailment
from tests.support import training_logs


def _train(tmp_path, *flags):
    return cli.main(
        [
            "train",
            "entailment",
            "--epochs",
            "1",
            "--embedding-dim",
            "8",
            "--hidden-units",
            "8",
            "--no-tensorboard",
            "--run-dir",
            str(tmp_path / "run"),
            *flags,
        ]
    )


def test_train_on_generated_data_exports_and_predicts(tmp_path, capsys):
    export_dir = tmp_path / "saved_models" / "entailment"
    code = _train(
        tmp_path,
        "--synthetic-examples",
        "300",
        "--intra-attention",
        "--export",
        str(export_dir),
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "validation: accuracy" in out and "test: accuracy" in out
    assert "precision" in out and "contradiction" in out
    run = tmp_path / "run"
    assert (run / "alignment.png").read_bytes().startswith(b"\x89PNG")
    assert (run / "model.weights.h5").exists()
    assert (export_dir / "1" / "saved_model.pb").exists()

    example = make_synthetic_entailment(1, seed=9).examples
    plot = tmp_path / "pair.png"
    argv = [
        "predict",
        str(export_dir),
        "--premise",
        example.premises[0],
        "--hypothesis",
        example.hypotheses[0],
        "--plot",
        str(plot),
    ]
    assert cli.main(argv) == 0
    line = capsys.readouterr().out.splitlines()[0]
    premise, hypothesis, answer = line.split("\t")
    assert (premise, hypothesis) == (
        example.premises[0],
        example.hypotheses[0],
    )
    label, shares = answer[:-1].split(" (")
    assert label in LABELS
    shares = [share.split() for share in shares.split(", ")]
    assert [name for name, _ in shares] == list(LABELS)
    assert abs(sum(float(p) for _, p in shares) - 1.0) < 1e-2
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_train_on_a_folder_of_split_files(tmp_path, capsys):
    folder = tmp_path / "snli"
    folder.mkdir()
    generated = make_synthetic_entailment(200, seed=4).examples
    for split, part in (("dev", range(0, 150)), ("test", range(150, 200))):
        subset = generated.select(part)
        for name, lines in (
            ("s1", subset.premises),
            ("s2", subset.hypotheses),
            ("labels", [LABELS[i] for i in subset.labels]),
        ):
            with gzip.open(folder / f"{name}.{split}.gz", "wt") as f:
                f.write("".join(line + " \n" for line in lines))
    code = _train(
        tmp_path,
        "--data",
        str(folder),
        "--train-split",
        "dev",
        "--no-attention",
        "--no-tensorboard",
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "test: accuracy" in out and "(50)" in out
    assert not (tmp_path / "run" / "alignment.png").exists()
    # --no-tensorboard: the history alone.
    assert "tensorboard --logdir" not in out
    assert len(training_logs.history_rows(tmp_path / "run")) == 1
    assert training_logs.event_files(tmp_path / "run") == []


def test_predict_names_a_folder_without_a_model(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(
            ["predict", str(tmp_path), "--premise", "a", "--hypothesis", "b"]
        )
    assert "No SavedModel" in capsys.readouterr().err


def test_train_reports_a_bad_data_line(tmp_path, capsys):
    bad = tmp_path / "pairs.tsv"
    bad.write_text(
        "a dog runs\tan animal runs\tentailment\na cat\ta dog\tmaybe\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as exit_info:
        _train(tmp_path, "--data", str(bad))
    assert exit_info.value.code == 2  # a usage error, not a traceback
    assert "pairs.tsv:2" in capsys.readouterr().err.splitlines()[-1]


def test_train_starts_from_word_vectors(tmp_path, capsys):
    generated = make_synthetic_entailment(200, seed=6).examples
    words = sorted(
        {
            w
            for s in generated.premises + generated.hypotheses
            for w in s.split()
        }
    )
    known = words[: len(words) // 2]
    vectors = tmp_path / "vectors.txt"
    rng = __import__("numpy").random.default_rng(0)
    vectors.write_text(
        "".join(
            w + " " + " ".join(f"{v:.4f}" for v in rng.normal(size=8)) + "\n"
            for w in known
        ),
        encoding="utf-8",
    )
    code = _train(
        tmp_path,
        "--synthetic-examples",
        "200",
        "--word-vectors",
        str(vectors),
    )
    assert code == 0
    out = capsys.readouterr().out
    vocabulary = (tmp_path / "run" / "vocabulary" / "vocabulary.txt").read_text(
        encoding="utf-8"
    )
    found = len(set(vocabulary.splitlines()) & set(known))
    assert 0 < found and f"{found} of" in out and "found" in out
