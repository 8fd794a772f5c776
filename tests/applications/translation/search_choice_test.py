"""`choose_search`: of greedy search and beam 4 with each length penalty,
the one whose validation translations score the highest cased BLEU, the
first of equal scores; each search scores the same first `max_pairs`
pairs. A translator stand-in scores each search from a table (the
command's test, `translation_cli_test.py`, runs it on a trained one)."""

import pytest

from attention_zoo.decoding.searches import BeamSearch
from attention_zoo_apps.translation.search_choice import candidates
from attention_zoo_apps.translation.search_choice import choose_search


class _Scored:
    """`evaluate(pairs, search=...)` from `bleu[search]`; records the
    pairs each search scored."""

    def __init__(self, bleu):
        self.bleu = bleu
        self.scored = []

    def evaluate(self, pairs, *, search):
        self.scored.append((search, list(pairs)))
        return {"bleu": self.bleu[search], "chrf": 2 * self.bleu[search]}


PAIRS = [(f"source {i}", f"target {i}") for i in range(50)]


def test_the_candidates_are_greedy_then_beam_4_with_each_penalty():
    found = [(s.beam_size, s.length_penalty) for s in candidates()]
    assert found == [(1, 0.0), (4, 0.0), (4, 0.6), (4, 1.0)]


@pytest.mark.parametrize(
    "scores, best",
    [([10.0, 12.5, 12.25, 11.0], 1), ([9.0, 8.0, 8.5, 9.5], 3)],
)
def test_the_highest_bleu_is_chosen(scores, best):
    searches = candidates()
    translator = _Scored(dict(zip(searches, scores)))
    chosen, rows = choose_search(translator, PAIRS, max_pairs=20)
    assert chosen == searches[best]
    assert [search for search, _ in translator.scored] == searches
    assert all(pairs == PAIRS[:20] for _, pairs in translator.scored)
    assert rows[best] == {
        "beam size": searches[best].beam_size,
        "length penalty": searches[best].length_penalty,
        "validation BLEU": scores[best],
        "validation chrF": 2 * scores[best],
    }


def test_ties_go_to_the_first_and_no_pairs_is_an_error():
    searches = [BeamSearch(1, 0.0), BeamSearch(4, 0.6), BeamSearch(4, 1.0)]
    translator = _Scored(dict(zip(searches, [5.0, 7.0, 7.0])))
    chosen, rows = choose_search(translator, PAIRS, searches)
    assert chosen is searches[1] and len(rows) == 3
    with pytest.raises(ValueError, match="`pairs` is empty"):
        choose_search(translator, [])
