"""One input contract at every door of an entailment export.

The export refuses a sentence without words (empty or whitespace only)
with an `InvalidArgumentError` naming the input and its batch positions,
as `attention-zoo predict` refuses it (a 400 over REST:
`tests/serving/rest_grpc_api_test.py`); it says which
pairs it cut to the tokens the model reads (`truncated`), and cuts the
strings before tokenizing them, so a 30 MB premise costs little memory.
`attention-zoo predict` prints each class's probability by name and warns
on stderr of a cut pair.
"""

import re

import pytest
import tensorflow as tf

from attention_zoo_apps import cli
from attention_zoo_apps.entailment.examples import LABELS
from tests.support import shared_bundles
from tests.support.fresh_process import run_without_project

PREMISE = "the old sad dirty bird stands"
HYPOTHESIS = "the old sad duck stands"
# More tokens than the tiny model's `max_length` (16).
LONG = " ".join([PREMISE] * 10)


@pytest.fixture(scope="module")
def export_dir(shared):
    """A folder with version 1 of the tiny entailment export (shared with
    the classifier tests, read only)."""
    bundle = shared_bundles.entailment_classifier(shared)
    assert bundle.config.max_length == 16
    return shared_bundles.entailment_export(shared)


@pytest.fixture(scope="module")
def serve(export_dir):
    model = tf.saved_model.load(str(export_dir / "1"))
    return model.signatures["serving_default"]


def _call(serve, premises, hypotheses):
    return serve(
        premise=tf.constant(premises, tf.string),
        hypothesis=tf.constant(hypotheses, tf.string),
    )


def test_the_export_says_which_pairs_it_cut(serve):
    outputs = _call(
        serve, [PREMISE, LONG, PREMISE], [HYPOTHESIS, HYPOTHESIS, LONG]
    )
    assert outputs["truncated"].numpy().tolist() == [False, True, True]


@pytest.mark.parametrize(
    "premises, hypotheses, name, positions",
    [
        ([""], [HYPOTHESIS], "premise", "[0]"),
        ([PREMISE, " \t\n"], [HYPOTHESIS, HYPOTHESIS], "premise", "[1]"),
        # No-break and ideographic spaces: NFKC makes them spaces.
        (
            [PREMISE] * 3,
            ["\u00a0", HYPOTHESIS, "\u3000"],
            "hypothesis",
            "[0 2]",
        ),
    ],
)
def test_a_sentence_without_words_is_refused_naming_it(
    serve, premises, hypotheses, name, positions
):
    message = f"`{name}` must not be empty .*{re.escape(positions)}"
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _call(serve, premises, hypotheses)


def test_a_30_mb_premise_is_not_tokenized_whole(export_dir):
    """Peak memory grows by far less than the 0.8 GB that tokenizing
    30 MB took, in a process that loads the export as a server does."""
    grown = run_without_project(
        f"""
import resource

serve = tf.saved_model.load({str(export_dir / "1")!r}).signatures[
    "serving_default"
]
def call(premise):
    return serve(premise=tf.constant([premise]),
                 hypothesis=tf.constant(["a bird"]))
call("a bird stands")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
huge = call("the old sad bird stands " * 1_250_000)  # 30 MB
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
emit({{"kb": after - before, "truncated": huge["truncated"].numpy().tolist()}})
"""
    )
    assert grown["truncated"] == [True]
    assert grown["kb"] < 250_000, grown  # ru_maxrss is in KiB on Linux


def _predict(export_dir, *flags):
    return cli.main(["predict", str(export_dir), *flags])


def test_predict_prints_every_class_by_name(export_dir, serve, capsys):
    flags = ["--premise", PREMISE, "--hypothesis", "a"]
    assert _predict(export_dir, *flags) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    premise, hypothesis, answer = line.split("\t")
    label, shares = re.fullmatch(r"(\w+) \((.*)\)", answer).groups()
    names = [share.split()[0] for share in shares.split(", ")]
    assert names == list(LABELS) and label in LABELS
    probabilities = _call(serve, [PREMISE], ["a"])["probabilities"][0]
    assert shares == ", ".join(
        f"{name} {p:.3f}" for name, p in zip(LABELS, probabilities.numpy())
    )


def test_predict_warns_on_stderr_of_a_cut_pair(export_dir, capsys):
    flags = ["--premise", PREMISE, "--hypothesis", HYPOTHESIS]
    assert _predict(export_dir, *flags, "--premise", LONG, *flags[2:]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    (warning,) = captured.err.strip().splitlines()
    assert warning.startswith("attention-zoo predict: warning: pair 2: ")
    assert "16 tokens" in warning
    assert _predict(export_dir, *flags) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "premise, said",
    [
        ("", "--premise 1 is empty"),  # refused before the export loads
        ("\u00a0\u3000", "--premise 1: no words"),  # refused by the export
    ],
)
def test_predict_refuses_what_the_export_refuses(
    export_dir, capsys, premise, said
):
    with pytest.raises(SystemExit) as exit_info:
        _predict(export_dir, "--premise", premise, "--hypothesis", "a")
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("attention-zoo predict: error: ") and said in line
