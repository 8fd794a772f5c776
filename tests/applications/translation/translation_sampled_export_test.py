"""A translation export that samples: `serving_default` draws seeds and
returns them, `seeded` takes them, and a text with a seed gets the
translation `translate(..., seed=[...])` gives it in Python, in any batch,
served without Keras or the project."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import read_warmup_requests
from attention_zoo_apps.translation.export import TranslationServingModule
from attention_zoo_apps.translation.synthetic import make_synthetic_pairs
from attention_zoo_apps.translation.translator import Translator
from tests.support import fresh_process

SAMPLING = {"sampling": "top_p", "top_p": 0.95, "temperature": 1.5}


@pytest.fixture(scope="module")
def translator(tiny_rnn):
    """The tiny RNN translator, trained once per session (`tiny_rnn`)."""
    return Translator.load(tiny_rnn / "bundle")


@pytest.fixture(scope="module")
def texts():
    pairs = make_synthetic_pairs(6, seed=4).pairs
    return [source for source, _ in pairs] + [""]


@pytest.fixture(scope="module")
def module(translator):
    """The serving module that samples with `SAMPLING`, shared by the
    tests that call it (its compiled searches with it)."""
    return TranslationServingModule(translator, **SAMPLING)


@pytest.fixture(scope="module")
def sampled_export(translator, tmp_path_factory):
    """The folder of versions of the translator exported with
    `SAMPLING` (version 1); read-only."""
    folder = tmp_path_factory.mktemp("sampled") / "translation"
    translator.export(str(folder / "1"), **SAMPLING)
    return folder


def _strings(tensor):
    return [t.decode("utf-8") for t in tensor.numpy()]


def test_seeded_equals_translate_with_the_same_seeds(translator, module, texts):
    seeds = np.array([5, 2**32 - 1, 17, 0, 123456789, 8, 9], "int64")
    served = module.seeded(tf.constant(texts), tf.constant(seeds))
    expected, maps = translator.translate(
        texts, seed=seeds, return_attention=True, **SAMPLING
    )
    assert _strings(served["translation"]) == expected
    np.testing.assert_array_equal(served["seed"].numpy(), seeds)
    for row, alignment in enumerate(maps):
        rows, columns = alignment.shape
        np.testing.assert_allclose(
            served["attention"].numpy()[row, :rows, :columns],
            alignment,
            atol=1e-5,
        )
    # In Python, an int seed gives text i the seed + i.
    as_int = translator.translate(texts, seed=40, **SAMPLING)
    assert as_int == translator.translate(
        texts, seed=np.arange(40, 40 + len(texts)), **SAMPLING
    )
    # Signed and unsigned spellings of the same 32 bits draw alike.
    signed = module.seeded(tf.constant(texts), tf.constant(seeds - 2**32))
    assert _strings(signed["translation"]) == expected


def test_a_text_draws_alike_in_any_batch(module, texts):
    seeds = np.arange(100, 100 + len(texts), dtype="int64")
    whole = _strings(
        module.seeded(tf.constant(texts), tf.constant(seeds))["translation"]
    )
    for rows in ([3], [5, 0], [6, 2, 4, 1]):
        part = module.seeded(
            tf.constant([texts[i] for i in rows]), tf.constant(seeds[rows])
        )
        assert _strings(part["translation"]) == [whole[i] for i in rows]
    # Samples differ with the seed (the tiny model is far from certain).
    draws = {
        tuple(
            _strings(
                module.seeded(
                    tf.constant(texts[:3]), tf.constant([seed] * 3, tf.int64)
                )["translation"]
            )
        )
        for seed in range(6)
    }
    assert len(draws) > 1


def test_serving_default_draws_new_seeds_and_returns_them(module, texts):
    first = module.serve(tf.constant(texts))
    second = module.serve(tf.constant(texts))
    seeds = first["seed"].numpy()
    assert seeds.dtype == np.int64 and seeds.shape == (len(texts),)
    assert 0 <= seeds.min() and seeds.max() < 2**32
    assert not np.array_equal(seeds, second["seed"].numpy())
    again = module.seeded(tf.constant(texts), first["seed"])
    assert _strings(again["translation"]) == _strings(first["translation"])


def test_seeded_needs_one_seed_per_text(module, texts):
    with pytest.raises(tf.errors.InvalidArgumentError, match="`seed`"):
        module.seeded(tf.constant(texts[:3]), tf.constant([1, 2], tf.int64))


@pytest.mark.parametrize(
    "search",
    [
        {"beam_size": 2},
        {"sampling": "greedy"},
        {"sampling": "top_k", "top_k": 3, "temperature": 0.0},
    ],
    ids=["beam", "greedy", "cold"],
)
def test_an_export_that_draws_nothing_has_no_seeds(translator, search):
    module = TranslationServingModule(translator, **search)
    assert set(module.serving_signatures()) == {"serving_default"}
    assert not hasattr(module, "seeded")
    assert set(module.serve(tf.constant(["a b"]))) == {
        "translation",
        "attention",
        "truncated",
    }


def test_sampling_with_a_beam_is_refused_and_writes_nothing(
    translator, tmp_path
):
    path = tmp_path / "translation" / "1"
    with pytest.raises(ValueError, match="beam_size=2"):
        translator.export(str(path), beam_size=2, sampling="top_k", top_k=3)
    assert not path.exists()


def test_sampling_export_serves_without_the_project(
    translator, texts, sampled_export
):
    path = str(sampled_export / "1")
    seeds = [3, 1, 4, 1, 5, 9, 2]
    expected = translator.translate(texts, seed=seeds, **SAMPLING)
    served = fresh_process.run_without_project(
        f"""
model = tf.saved_model.load({path!r})
default = model.signatures["serving_default"]
seeded = model.signatures["seeded"]
texts = tf.constant({texts!r})
drawn = default(text=texts)
again = seeded(text=texts, seed=drawn["seed"])
mine = seeded(text=texts, seed=tf.constant({seeds!r}, tf.int64))
part = seeded(text=texts[2:4], seed=tf.constant({seeds[2:4]!r}, tf.int64))
strings = lambda t: [s.decode("utf-8") for s in t.numpy()]
emit({{
    "signatures": sorted(model.signatures),
    "seeded_inputs": sorted(seeded.structured_input_signature[1]),
    "outputs": sorted(drawn),
    "drawn": strings(drawn["translation"]),
    "again": strings(again["translation"]),
    "mine": strings(mine["translation"]),
    "part": strings(part["translation"]),
}})
"""
    )
    assert served["signatures"] == ["seeded", "serving_default"]
    assert served["seeded_inputs"] == ["seed", "text"]
    assert served["outputs"] == [
        "attention",
        "seed",
        "translation",
        "truncated",
    ]
    assert served["again"] == served["drawn"]
    assert served["mine"] == expected
    assert served["part"] == expected[2:4]
    with open(os.path.join(path, "metadata.json")) as f:
        decoding = json.load(f)["decoding"]
    assert decoding["sampling"] == "top_p" and decoding["top_p"] == 0.95
    assert decoding["temperature"] == 1.5 and decoding["beam_size"] == 1
    warmups = read_warmup_requests(path)
    assert {name for name, _ in warmups} == {"serving_default", "seeded"}
    assert all(
        set(inputs) == {"text", "seed"}
        for name, inputs in warmups
        if name == "seeded"
    )


def test_translate_command_takes_a_seed(
    translator, texts, sampled_export, tiny_rnn, capsys
):
    from attention_zoo_apps import cli

    sampled, plain = sampled_export, tiny_rnn / "translation"
    chosen = texts[:3]
    assert cli.main(["translate", str(sampled), *chosen, "--seed", "7"]) == 0
    lines = capsys.readouterr().out.splitlines()[-3:]
    expected = translator.translate(chosen, seed=7, **SAMPLING)
    assert lines == [f"{t}\t{e}" for t, e in zip(chosen, expected)]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["translate", str(plain), chosen[0], "--seed", "7"])
    assert exit_info.value.code == 2
    assert "does not sample" in capsys.readouterr().err
