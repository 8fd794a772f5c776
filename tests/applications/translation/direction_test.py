"""Fine-tuning checks which way its pairs run before training: the shipped
translation-spa-eng refuses English -> Spanish and id -> Spanish pairs, and
takes Spanish -> English ones (`attention_zoo_apps.translation.direction`)."""

import argparse
import gzip
import os

import pytest

from attention_zoo.export import resolve_version
from attention_zoo_apps.common import zoo
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.translation import direction
from attention_zoo_apps.translation import train as translation_train

MODEL = "translation-spa-eng"

# English<TAB>Spanish, the order of the Tatoeba corpus; written for these
# tests, so that they run without ../shared/data.
PAIRS = [
    ("Where is the library?", "¿Dónde está la biblioteca?"),
    ("I like reading books in the park.", "Me gusta leer libros en el parque."),
    ("The water is cold today.", "El agua está fría hoy."),
    (
        "My sister lives in a small town.",
        "Mi hermana vive en un pueblo pequeño.",
    ),
    ("We are going to the beach tomorrow.", "Mañana vamos a la playa."),
    ("Can you help me, please?", "¿Puedes ayudarme, por favor?"),
    (
        "The children are playing in the garden.",
        "Los niños juegan en el jardín.",
    ),
    ("I don't understand the question.", "No entiendo la pregunta."),
    (
        "She bought a new car last week.",
        "Ella compró un coche nuevo la semana pasada.",
    ),
    ("The train leaves at eight.", "El tren sale a las ocho."),
    (
        "He always drinks coffee in the morning.",
        "Él siempre bebe café por la mañana.",
    ),
    ("This house is very old.", "Esta casa es muy vieja."),
    ("Do you want to eat with us?", "¿Quieres comer con nosotros?"),
    (
        "The dog is sleeping under the table.",
        "El perro duerme debajo de la mesa.",
    ),
    (
        "I have two brothers and one sister.",
        "Tengo dos hermanos y una hermana.",
    ),
    ("It is raining again.", "Está lloviendo otra vez."),
    ("They work in a hospital.", "Ellos trabajan en un hospital."),
    ("My father cooks on Sundays.", "Mi padre cocina los domingos."),
    ("The store closes at nine.", "La tienda cierra a las nueve."),
    ("I lost my keys yesterday.", "Ayer perdí mis llaves."),
    ("We need more time.", "Necesitamos más tiempo."),
    ("Your shoes are under the bed.", "Tus zapatos están debajo de la cama."),
    (
        "The teacher is talking to the students.",
        "El profesor está hablando con los estudiantes.",
    ),
    ("I would like a glass of water.", "Quisiera un vaso de agua."),
    ("Open the window, please.", "Abre la ventana, por favor."),
    ("The city is beautiful at night.", "La ciudad es hermosa de noche."),
    ("He forgot his umbrella at home.", "Él olvidó su paraguas en casa."),
    ("I am learning to swim.", "Estoy aprendiendo a nadar."),
    ("The soup is too hot.", "La sopa está demasiado caliente."),
    ("Where do you live?", "¿Dónde vives?"),
    ("My friends arrived late.", "Mis amigos llegaron tarde."),
    ("The book is on the chair.", "El libro está sobre la silla."),
    ("She sings very well.", "Ella canta muy bien."),
    ("We visited the museum on Friday.", "Visitamos el museo el viernes."),
    ("I can't find my phone.", "No encuentro mi teléfono."),
    (
        "The mountains are covered with snow.",
        "Las montañas están cubiertas de nieve.",
    ),
    ("Please close the door.", "Por favor, cierra la puerta."),
    ("The cat wants to go outside.", "El gato quiere salir."),
    ("How much does this shirt cost?", "¿Cuánto cuesta esta camisa?"),
    ("Tomorrow is my birthday.", "Mañana es mi cumpleaños."),
]
IDS = [str(4000 + 37 * i) for i in range(len(PAIRS))]


@pytest.fixture(scope="module")
def tokenizers():
    """The shipped model's source and target tokenizers (its vocabularies,
    as `--init-from` keeps them)."""
    version = resolve_version(zoo.resolve(MODEL))
    return tuple(
        SubwordTokenizer.load(os.path.join(version, folder))
        for folder in ("source_vocab", "target_vocab")
    )


def _args(data="mine.tsv", source_column=0, target_column=1):
    return argparse.Namespace(
        data=data,
        source_column=source_column,
        target_column=target_column,
        init_from=MODEL,
    )


def _problem(tokenizers, pairs, **flags):
    """The refusal's message, or None when the pairs are refused nothing."""
    refuse, message = direction.direction_problem(
        *tokenizers, pairs, _args(**flags)
    )
    return message if refuse else None


# French, which neither of the model's vocabularies was learned on.
FRENCH = [
    "Je suis fatigué ce soir.",
    "Nous allons au marché demain matin.",
    "Il fait très froid aujourd'hui.",
    "Où est la gare, s'il vous plaît ?",
    "Mon frère travaille dans une boulangerie.",
    "Les enfants jouent dans le jardin.",
]


def test_spanish_to_english_pairs_pass(tokenizers):
    spa_eng = [(spa, eng) for eng, spa in PAIRS]
    assert (
        _problem(tokenizers, spa_eng, source_column=1, target_column=0) is None
    )
    source, target = tokenizers
    spanish = direction.read_column(source, target, [s for s, _ in spa_eng])
    english = direction.read_column(source, target, [e for _, e in spa_eng])
    assert spanish.language == "source" and english.language == "target"
    # Measured: 1.0 and 2.6 pieces a word, the other way for English.
    assert spanish.target_pieces > 2 * spanish.source_pieces
    assert english.source_pieces > 2 * english.target_pieces


def test_english_to_spanish_pairs_are_refused_naming_the_columns(tokenizers):
    problem = _problem(tokenizers, PAIRS)  # the file's order, the defaults
    assert problem.startswith(
        f"--data mine.tsv does not fit --init-from {MODEL}: column 0 "
        "(--source-column) reads like the model's target language; column 1 "
        "(--target-column) reads like the model's source language"
    )
    assert problem.endswith("give --source-column 1 --target-column 0")
    assert "\n" not in problem


def test_id_to_spanish_pairs_are_refused(tokenizers):
    # `id<TAB>spa<TAB>eng` read with the default columns: id -> Spanish.
    id_spa = [(id_, spa) for id_, (_, spa) in zip(IDS, PAIRS)]
    problem = _problem(tokenizers, id_spa)
    assert "column 0 (--source-column) reads like ids (e.g. '4000')" in problem
    assert "column 1 (--target-column) reads like the model's source" in problem
    assert "--source-column N for the sentences the model reads" in problem
    # The same file with the right columns passes.
    spa_eng = [(spa, eng) for eng, spa in PAIRS]
    assert (
        _problem(tokenizers, spa_eng, source_column=1, target_column=2) is None
    )


def test_a_third_language_is_warned_about_not_refused(tokenizers):
    # Adapting the model to French -> English is the user's choice: the
    # source column reads like neither language, which is said, not refused.
    english = [eng for eng, _ in PAIRS[: len(FRENCH)]]
    pairs = list(zip(FRENCH, english))
    refuse, message = direction.direction_problem(
        *tokenizers, pairs, _args(source_column=0, target_column=1)
    )
    assert not refuse
    assert "reads like neither of the model's languages" in message


def test_a_jsonl_file_is_told_to_swap_its_fields(tokenizers):
    problem = _problem(tokenizers, PAIRS, data="mine.jsonl")
    assert 'its "source" field reads like the model\'s target' in problem
    assert problem.endswith('swap the "source" and "target" fields')


def test_the_corpus_in_its_own_order_is_refused(tokenizers, shared_data):
    path = shared_data / "spa-eng" / "spa.txt.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        pairs = [tuple(next(f).split("\t")[:2]) for _ in range(2000)]
    assert "--source-column 1 --target-column 0" in _problem(tokenizers, pairs)
    swapped = [(spa, eng) for eng, spa in pairs]
    assert (
        _problem(tokenizers, swapped, source_column=1, target_column=0) is None
    )


def test_readme_example_is_refused_before_training(tmp_path, capsys):
    """README's `train translation --init-from translation-spa-eng --data
    mine.tsv` with an `english<TAB>spanish` file: exit 2, one line, and
    nothing trained or written."""
    data = tmp_path / "mine.tsv"
    data.write_text("".join(f"{e}\t{s}\n" for e, s in PAIRS), "utf-8")
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as exited:
        translation_train.main([
            "--init-from", MODEL, "--data", str(data), "--epochs", "1",
            "--run-dir", str(run), "--export", str(tmp_path / "export"),
        ])  # fmt: skip
    assert exited.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "column 0 (--source-column) reads like the model's target" in error
    assert error.endswith("give --source-column 1 --target-column 0")
    # Nothing trained: no config, vocabularies or weights, no export.
    written = [p.name for p in run.rglob("*")] if run.exists() else []
    assert not [
        n for n in written if "vocab" in n or n.endswith((".h5", ".json"))
    ]
    assert not (tmp_path / "export").exists()


def test_an_id_column_warns_when_training_from_scratch(capsys):
    id_spa = [(id_, spa) for id_, (_, spa) in zip(IDS, PAIRS)]
    args = _args()
    args.init_from = None
    direction.check_columns(args, None, id_spa)
    assert capsys.readouterr().err == (
        "warning: --data mine.tsv: column 0 (--source-column) holds ids, not "
        "sentences (e.g. '4000'); give --source-column N for the sentences "
        "the model reads and --target-column N for their translations "
        "(0-based)\n"
    )
    direction.check_columns(args, None, PAIRS)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "text, expected",
    [("1234", True), ("#12", True), ("A-0012", True), ("Ve.", False),
     ("Tengo 2 perros.", False), ("¡Hola!", False)],
)  # fmt: skip
def test_looks_like_id(text, expected):
    assert direction.looks_like_id(text) is expected


def test_help_says_which_column_is_which(capsys):
    with pytest.raises(SystemExit):
        translation_train.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "sentences to translate from (default: 0)" in text
    assert "translations to learn (default: 1)" in text
    assert "--source-column 1 --target-column 0 Spanish -> English" in text
