"""A search is one object: `Greedy`, `BeamSearch`, `Sampling`, `get` and
the loose keyword arguments as their aliases."""

import json

import numpy as np
import pytest

from attention_zoo.decoding import BeamSearch
from attention_zoo.decoding import Greedy
from attention_zoo.decoding import Sampling
from attention_zoo.decoding import searches
from tests.support.toy_adapter import decode_to_numpy
from tests.support.toy_adapter import make_adapter
from tests.support.toy_adapter import random_sources


@pytest.mark.parametrize("name", sorted(searches.SHORTCUTS))
def test_every_shortcut_resolves(name):
    search = searches.get(name)
    assert isinstance(search, searches.SEARCHES)
    assert searches.get(search) is search
    assert searches.get(searches.serialize(search)) == search
    json.dumps(searches.serialize(search))  # an export request's JSON
    hash(search.canonical())  # the compiled-search cache's key


def test_get_refuses_what_names_no_search():
    for identifier in ("beams", 4, {"class_name": "Nope"}):
        with pytest.raises(ValueError, match=r"`search` must be .*search="):
            searches.get(identifier)
    assert searches.get(None) is None


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: BeamSearch(beam_size=0), "beam_size=0"),
        (lambda: BeamSearch(length_penalty=-1.0), "length_penalty=-1.0"),
        (lambda: BeamSearch(coverage_penalty=-0.5), "coverage_penalty=-0.5"),
        (lambda: BeamSearch(2, num_results=3), "num_results=3, beam_size=2"),
        (lambda: Sampling("beam"), "strategy='beam'"),
        (lambda: Sampling(None), "strategy=None"),
        (lambda: Sampling("top_k"), "top_k=None"),
        (lambda: Sampling("top_p", top_p=1.5), "top_p=1.5"),
        (lambda: Sampling(temperature=-1.0), "temperature=-1.0"),
        (lambda: Sampling(top_k=3), "top_k=3, strategy='temperature'"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(make, message):
    with pytest.raises(ValueError, match=message) as error:
        make()
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    "search, options",
    [
        (Greedy(), {}),
        ("greedy", {"beam_size": 1}),
        (
            BeamSearch(3, length_penalty=0.6, coverage_penalty=1.5),
            {"beam_size": 3, "length_penalty": 0.6, "coverage_penalty": 1.5},
        ),
        (BeamSearch(3, num_results=2), {"beam_size": 3, "num_results": 2}),
        (
            Sampling("top_k", temperature=5.0, top_k=2),
            {"sampling": "top_k", "temperature": 5.0, "top_k": 2},
        ),
    ],
)
def test_a_search_decodes_as_its_loose_options(search, options):
    adapter = make_adapter(seed=4)
    sources = random_sources(3, 5, seed=4)
    loose = decode_to_numpy(adapter, sources, seed=5, **options)
    out = decode_to_numpy(adapter, sources, search=search, seed=5)
    assert set(out) == set(loose)
    for key in loose:
        np.testing.assert_array_equal(out[key], loose[key], err_msg=key)
    assert len(adapter.encoded) == 1  # the same compiled search


def test_a_search_and_loose_options_together_are_refused():
    adapter, sources = make_adapter(), random_sources(2, 3)
    with pytest.raises(ValueError, match="not both.*beam_size=4"):
        decode_to_numpy(adapter, sources, search="beam", beam_size=4)
    with pytest.raises(TypeError, match="beam_szie"):
        decode_to_numpy(adapter, sources, beam_szie=4)


def test_defaults_fill_a_beam_and_record_every_option():
    defaults = searches.SearchDefaults(BeamSearch(3), length_penalty=0.6)
    assert defaults.resolve() == BeamSearch(3, 0.6)
    assert defaults.resolve("beam") == BeamSearch(4, 0.6)
    assert defaults.resolve(num_results=2) == BeamSearch(3, 0.6, 0.0, 2)
    assert defaults.resolve(sampling="top_p", top_p=0.5) == Sampling(
        "top_p", top_p=0.5
    )
    assert defaults.resolve(beam_size=1) == Greedy()
    assert defaults.options(Greedy()) == {
        **searches.LOOSE_DEFAULTS,
        "length_penalty": 0.6,
    }
    assert defaults.options(Sampling("top_k", 0.5, 4)) == {
        **searches.LOOSE_DEFAULTS,
        "length_penalty": 0.6,
        "sampling": "top_k",
        "temperature": 0.5,
        "top_k": 4,
    }
