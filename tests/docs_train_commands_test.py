"""Every `attention-zoo train` and `explain` line of README, the
documentation site and the model cards runs as written, in process, on
tiny settings: a `train` line's own flags and data, then flags that make
it small (a few units, one epoch, a few hundred pairs or images), which
the parser takes over the line's values. It must exit with 0, fill its
run folder (`--run-dir`, else `outputs/APP`) and write the export its
`--export` names; an `explain` line must write its report and picture.

Each line runs in a folder of its own holding what the page assumes is
there: the user's files it names (`mine.tsv`, `spa.txt.gz`, `records/`,
`fhir-export/`), small files of the application's formats written here,
and beside it `../shared/data`, the project's data sets (a line that
reads one that is absent is skipped, naming it). A line that fine-tunes
an export of another line (`--init-from saved_models/ehr`) runs after
that line, in a folder where its export is; an `explain` line runs in the
folder of the `train` line that wrote the run folder it reads, from the
same `--data`.

Lines whose tiny runs would not differ run once (`_shape`: the two model
cards' translation lines differ only in their columns). Two kinds of
line run elsewhere: `train APP` alone (`tests/support/tiny_runs.py`'s
runs are that line with the same tiny flags, throughout the suite), and
`--strategy tpu`, which needs a TPU
(`distribute_test.test_tpu_without_a_tpu_is_a_clear_error` runs it on
this machine and checks its one-line error)."""

import gzip
import os
import pathlib
import tempfile

import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.ehr import fhir_writer
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from attention_zoo_apps.ehr.synthetic import save_synthetic_long_format
from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.synthetic import make_synthetic_entailment
from tests import docs_commands_test

pytestmark = pytest.mark.slow

# Appended to every line: one epoch, no TensorBoard logs (a compile and a
# few images per run; `watching_test` covers them).
SHORT = ["--epochs", "1", "--no-tensorboard"]
# Appended to the lines that build a model (not `--init-from`, which
# refuses sizes that differ from the model's), by application.
SMALL = {
    "translation": ["--units", "8", "--embedding-dim", "8",
                    "--vocabulary-size", "60", "--max-length", "12"],
    "entailment": ["--embedding-dim", "8", "--hidden-units", "8",
                   "--vocabulary-size", "60"],
    "captioning": ["--embedding-dim", "8", "--units", "8",
                   "--vocabulary-size", "60", "--image-size", "64"],
    "ehr": ["--embedding-dim", "8", "--units", "8"],
}  # fmt: skip
# Appended too to a translation line that trains a Transformer.
SMALL_TRANSFORMER = ["--model-dim", "16", "--num-heads", "2",
                     "--feed-forward-dim", "32"]  # fmt: skip
# The same, for a line whose word vectors set the embedding size.
SMALL_WITH_VECTORS = {
    "entailment": ["--hidden-units", "8", "--vocabulary-size", "60"]
}
# Appended to every line of the application: how much data it reads
# (entailment reads whole data sets, of about 10,000 pairs: in large
# batches, a few dozen steps).
FEW = {
    "translation": ["--max-pairs", "300"],
    "captioning": ["--max-images", "24", "--beam-size", "1"],
    "entailment": ["--batch-size", "512"],
}
# Appended to a line without `--data`: how many generated examples.
GENERATED = {
    "translation": ["--synthetic-pairs", "200"],
    "entailment": ["--synthetic-examples", "200"],
    "captioning": ["--synthetic-images", "40"],
    "ehr": ["--synthetic-patients", "60"],
}
# Flags whose value a tiny run does not notice: lines that differ only in
# these (and in the values of the others) run once.
UNNOTICED = {"--seed", "--patience", "--epochs", "--export"}
# The lines run elsewhere (the module docstring says where).
ELSEWHERE = {("captioning", "--strategy", "tpu")}
# The line each application prints with its test split's scores.
TEST_SCORES = {
    "translation": "test BLEU ",
    "entailment": "test: accuracy",
    "captioning": "test BLEU-1",
    "ehr": "test: AUROC",
}

# The user's pairs of the pages' `mine.tsv` and `spa.txt.gz`, in the
# Tatoeba files' columns (English, then Spanish).
PAIRS = [
    ("Where is the library?", "¿Dónde está la biblioteca?"),
    ("It is very cold here.", "Hace mucho frío aquí."),
    ("Are you still at home?", "¿Todavía estás en casa?"),
    ("I do not know.", "No lo sé."),
    ("The cat is black.", "El gato es negro."),
    ("We eat bread every day.", "Comemos pan todos los días."),
    ("My brother lives in Madrid.", "Mi hermano vive en Madrid."),
    ("She reads a book.", "Ella lee un libro."),
    ("The water is cold.", "El agua está fría."),
    ("I want to sleep.", "Quiero dormir."),
    ("Tom is my friend.", "Tom es mi amigo."),
    ("The house is big.", "La casa es grande."),
    ("Open the door, please.", "Abre la puerta, por favor."),
    ("I have two dogs.", "Tengo dos perros."),
    ("It is raining.", "Está lloviendo."),
    ("We are tired.", "Estamos cansados."),
    ("Where are my keys?", "¿Dónde están mis llaves?"),
    ("I like coffee.", "Me gusta el café."),
    ("The children play in the park.", "Los niños juegan en el parque."),
    ("He speaks Spanish.", "Él habla español."),
    ("What time is it?", "¿Qué hora es?"),
    ("The car is red.", "El coche es rojo."),
    ("I am hungry.", "Tengo hambre."),
    ("She has a small garden.", "Ella tiene un jardín pequeño."),
]


def _value(argv, flag):
    """The last value of `flag` in `argv`, or None."""
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]
    return values[-1] if values else None


def _shape(argv):
    """What makes a line's tiny run differ from another's: its
    application, its `--data` and the flags it gives (but `UNNOTICED`)."""
    flags = {a for a in argv if a.startswith("--")} - UNNOTICED
    return argv[1], _value(argv, "--data"), frozenset(flags)


def _lines():
    """`(line, argv)` of the documented `train` lines, the first of each
    shape, in the order of the pages; and every line's export folder ->
    the line of its shape."""
    runs, exports = {}, {}
    for _, line, argv in docs_commands_test.documented_lines():
        if len(argv) > 2 and argv[0] == "train":
            if tuple(argv[1:]) not in ELSEWHERE:
                run = runs.setdefault(_shape(argv), (line, argv))
                if _value(argv, "--export"):
                    exports[_value(argv, "--export")] = run
    return list(runs.values()), exports


LINES, EXPORTERS = _lines()
EXPLAIN_LINES = docs_commands_test.documented_lines_of(("explain",))
# The page's `explain ... --patient 20001 --data records/` reads a patient
# of `records/`: one of the generated patients, renamed.
RENAMED = {"p00001": "20001"}


def _write_user_files(folder):
    """What the pages' lines name in the working folder, in a subfolder
    per application (the guides' `mine.tsv` are of two formats)."""
    translation = folder / "translation"
    translation.mkdir()
    tatoeba = "".join(f"{en}\t{es}\tCC-BY 2.0\n" for en, es in PAIRS)
    (translation / "spa.txt.gz").write_bytes(gzip.compress(tatoeba.encode()))
    tsv = "".join(f"{en}\t{es}\n" for en, es in PAIRS)
    (translation / "mine.tsv").write_text(tsv, encoding="utf-8")
    entailment = folder / "entailment"
    entailment.mkdir()
    examples = make_synthetic_entailment(120, seed=1).examples
    rows = zip(examples.premises, examples.hypotheses, examples.labels)
    tsv = "".join(f"{p}\t{h}\t{LABELS[label]}\n" for p, h, label in rows)
    (entailment / "mine.tsv").write_text(tsv, encoding="utf-8")
    (folder / "captioning").mkdir()
    ehr = folder / "ehr"
    patients = make_synthetic_patients(60, seed=2)
    save_synthetic_long_format(patients, ehr / "records")
    for path in (ehr / "records").iterdir():
        text = path.read_text(encoding="utf-8")
        for old, new in RENAMED.items():
            text = text.replace(f"{old},", f"{new},")
        path.write_text(text, encoding="utf-8")
    fhir_writer.save_synthetic_fhir(patients, ehr / "fhir-export")


@pytest.fixture
def shared_data_when_read(request):
    """A function giving the project's data sets (`shared_data`), called
    only by a line that reads them: it skips where they are absent."""
    return lambda: request.getfixturevalue("shared_data")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """`(root, user files, done)`: the folder whose subfolders the lines
    run in (beside them, `shared/data` is linked to the project's data
    sets when a line first reads them), the user's files, and each argv
    already run -> its folder."""
    user_files = tmp_path_factory.mktemp("user-files")
    _write_user_files(user_files)
    return tmp_path_factory.mktemp("documented-train"), user_files, {}


def _shared_data_needed(argv):
    """The `../shared/data/NAME` folders a line reads."""
    return [
        a.split("/")[3]
        for a in argv
        if a.startswith("../shared/data/") and len(a.split("/")) > 3
    ]


def _run(line, argv, workspace, shared_data):
    """Runs `argv` in its own folder of `workspace` (after the line that
    exports what its `--init-from` reads); returns that folder.
    `shared_data()` gives the project's data sets, or skips."""
    root, user_files, done = workspace
    if tuple(argv) in done:
        return done[tuple(argv)]
    for name in _shared_data_needed(argv):
        if not (shared_data() / name).is_dir():
            pytest.skip(f"{line}: needs {shared_data() / name}")
        if not (root / "shared").exists():
            os.makedirs(root / "shared")
            os.symlink(shared_data(), root / "shared" / "data")
    init_from = _value(argv, "--init-from")
    exported = None
    if init_from and init_from.startswith("saved_models/"):
        assert init_from in EXPORTERS, f"{line}: no line exports {init_from}"
        other_line, other = EXPORTERS[init_from]
        source = _run(other_line, other, workspace, shared_data)
        exported = source / _value(other, "--export")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="line-", dir=root))
    app = argv[1]
    for name in os.listdir(user_files / app):
        os.symlink(user_files / app / name, folder / name)
    if exported:
        os.makedirs(folder / "saved_models")
        os.symlink(exported, folder / init_from)
    extra = list(SHORT) + FEW.get(app, [])
    if not _value(argv, "--data"):
        extra += GENERATED[app]
    if not init_from:
        small = SMALL[app]
        if "--word-vectors" in argv:  # the vectors set the embedding size
            small = SMALL_WITH_VECTORS[app]
        extra += small
        if _value(argv, "--model") == "transformer":
            extra += SMALL_TRANSFORMER
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        code = cli.main([*argv, *extra])
    finally:
        os.chdir(cwd)
    assert code == 0, line
    done[tuple(argv)] = folder
    return folder


def test_the_pages_show_train_lines_of_every_application():
    apps = {argv[1] for _, argv in LINES}
    assert apps == {"translation", "entailment", "captioning", "ehr"}
    assert any("--init-from" in argv for _, argv in LINES)


@pytest.mark.parametrize("line, argv", LINES, ids=[line for line, _ in LINES])
def test_a_documented_train_line_runs(
    line, argv, workspace, shared_data_when_read, capsys
):
    folder = _run(line, argv, workspace, shared_data_when_read)
    out = capsys.readouterr().out
    assert TEST_SCORES[argv[1]] in out, line
    # What a run prints of the planted codes is the generated patients'.
    assert "planted" not in out or not _value(argv, "--data"), line
    run_dir = folder / (_value(argv, "--run-dir") or f"outputs/{argv[1]}")
    assert (run_dir / "config.json").is_file(), line
    assert list(run_dir.glob("*.weights.h5")), line
    export = _value(argv, "--export")
    if export:
        versions = sorted(pathlib.Path(folder / export).iterdir())
        assert [v.name for v in versions] == ["1"], line
        assert (versions[0] / "saved_model.pb").is_file(), line
        assert (versions[0] / "metadata.json").is_file(), line


def _trainer(argv):
    """The `train` line whose run folder and `--data` an `explain` line
    reads (`train APP` alone, which runs elsewhere, when no other does)."""
    run_dir, data = argv[1], _value(argv, "--data")
    candidates = [*LINES, ("attention-zoo train ehr", ("train", "ehr"))]
    for line, other in candidates:
        ran = _value(other, "--run-dir") or f"outputs/{other[1]}"
        if ran == run_dir and _value(other, "--data") == data:
            return line, other
    raise AssertionError(f"no documented train line writes {run_dir}")


def test_the_pages_show_explain_lines():
    assert len(EXPLAIN_LINES) >= 2


@pytest.mark.parametrize(
    "line, argv", EXPLAIN_LINES, ids=[line for line, _ in EXPLAIN_LINES]
)
def test_a_documented_explain_line_runs(
    line, argv, workspace, shared_data_when_read, monkeypatch, capsys
):
    folder = _run(*_trainer(argv), workspace, shared_data_when_read)
    capsys.readouterr()
    monkeypatch.chdir(folder)
    assert cli.main(list(argv)) == 0, line
    patient = _value(argv, "--patient")
    assert f"patient {patient}: risk " in capsys.readouterr().out, line
    report = folder / (_value(argv, "--out") or "report.html")
    assert "<html" in report.read_text(encoding="utf-8").lower(), line
    with open(report.with_suffix(".png"), "rb") as f:
        assert f.read(4) == b"\x89PNG", line
