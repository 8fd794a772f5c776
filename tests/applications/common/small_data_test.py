"""`attention-zoo train APP` on too little data: a usage error naming the
data, the split sizes and the flags that change them, before anything is
trained; scores that rest on few examples say so."""

import math

import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.commands import train_flags


def _pairs_file(tmp_path, rows):
    path = tmp_path / "data.tsv"
    lines = ["\t".join(row) + "\n" for row in rows]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _translation(tmp_path):
    rows = [(f"hello number {i}", f"hola numero {i}") for i in range(10)]
    path = _pairs_file(tmp_path, rows)
    return ["--data", str(path)], str(path), "10 pairs", "--test-fraction"


def _entailment(tmp_path):
    rows = [
        (f"a dog runs {i}", "an animal runs", "entailment") for i in range(5)
    ]
    path = _pairs_file(tmp_path, rows)
    flag = "--validation-fraction"
    return ["--data", str(path)], str(path), "5 pairs", flag


def _ehr(tmp_path):
    flags = ["--synthetic-patients", "4"]
    return flags, "the synthetic patients", "4 patients", "--test-fraction"


def _captioning(tmp_path):
    flags = ["--synthetic-images", "4", "--image-size", "32"]
    return flags, "the generated shapes", "0 validation", "--synthetic-images"


@pytest.mark.parametrize(
    "app, case",
    [
        ("translation", _translation),
        ("entailment", _entailment),
        ("ehr", _ehr),
        ("captioning", _captioning),
    ],
)
def test_an_empty_split_is_refused_before_training(app, case, tmp_path, capsys):
    flags, source, counts, flag = case(tmp_path)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", app, *flags, "--run-dir", str(run_dir)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"attention-zoo train {app}: error: {source}: ")
    assert counts in error and "empty" in error and flag in error
    assert not run_dir.exists()  # nothing trained, nothing written


def test_the_error_says_how_many_examples_a_fraction_needs(capsys):
    parser = cli._parser()
    with pytest.raises(SystemExit), train_flags.usage_errors(parser):
        train_flags.check_splits(
            "p.tsv",
            "pairs",
            {"train": 12, "validation": 1, "test": 0},
            {"test": ("--test-fraction", 0.03)},
        )
    error = capsys.readouterr().err
    needed = math.ceil(1 / 0.03)  # round(34 * 0.03) = 1: the split is used
    assert "p.tsv: 13 pairs give 12 train, 1 validation, 0 test" in error
    assert f"the test split needs at least {needed} pairs" in error


def test_a_split_left_out_on_purpose_is_not_checked():
    counts = train_flags.split_counts([1, 2], [], [3], validation_used=False)
    assert counts == {"train": 2, "test": 1}
    train_flags.check_splits("p.tsv", "pairs", counts)


@pytest.mark.parametrize("count, shown", [(7, True), (100, False)])
def test_scores_on_few_examples_are_flagged(count, shown, capsys):
    train_flags.note_few_examples("test", count, "pairs")
    out = capsys.readouterr().out
    assert (f"rest on {count} pairs only" in out) is shown


def test_entailment_report_prints_undefined_precision_as_na(capsys):
    from attention_zoo_apps.entailment import train
    from attention_zoo_apps.entailment.classifier import classification_report

    # Nothing is predicted "contradiction": its precision is 0 / 0.
    report = classification_report([0, 1, 2], [0, 1, 1])
    assert math.isnan(report["precision"]["contradiction"])
    train.print_report("test", report)
    out = capsys.readouterr().out
    assert "nan" not in out and "n/a" in out
    assert "rest on 3 pairs only" in out


def test_ehr_report_prints_an_undefined_auroc_as_na(capsys):
    from attention_zoo_apps.ehr import train

    report = dict(
        auroc=float("nan"), auprc=float("nan"), brier=0.25, patients=4,
        positives=0,
    )  # fmt: skip
    train.print_report("test", report)
    out = capsys.readouterr().out
    assert "nan" not in out and "AUROC n/a" in out
    assert "both classes" in out and "rest on 4 patients only" in out
