"""`choose_search`: the beam size and length penalty of a trained
translator picked on validation pairs (`attention-zoo train translation
--choose-search`), so that the test split is decoded, and the export
serves, with a search chosen without it."""

from attention_zoo.decoding.searches import BeamSearch

# The candidates: greedy search, then each beam size with each of GNMT's
# length penalties (alpha; 0.6 is Wu et al.'s and `translate`'s default).
BEAM_SIZES = (4,)
LENGTH_PENALTIES = (0.0, 0.6, 1.0)
# Validation pairs decoded per candidate, at most.
MAX_PAIRS = 1000


def candidates(beam_sizes=BEAM_SIZES, length_penalties=LENGTH_PENALTIES):
    """The searches tried, greedy first: `BeamSearch`es."""
    found = [BeamSearch(beam_size=1, length_penalty=0.0)]
    for beam_size in beam_sizes:
        for length_penalty in length_penalties:
            found.append(BeamSearch(beam_size, length_penalty))
    return found


def choose_search(translator, pairs, searches=None, max_pairs=MAX_PAIRS):
    """The search of `searches` (default `candidates()`) whose
    translations of the first `max_pairs` of `pairs` score the highest
    cased BLEU; of equal scores, the first (greedy, then the smaller
    beams and penalties).

    Args:
        translator: a trained `Translator`.
        pairs: list of `(source, target)` validation pairs.
        searches: list of `BeamSearch`, tried in order.
        max_pairs: int, how many pairs each search translates.

    Returns:
        `(search, rows)`: the chosen `BeamSearch`, and a row per search
        tried (`beam size`, `length penalty`, `validation BLEU`,
        `validation chrF`), in order.

    Raises:
        ValueError: `pairs` is empty.
    """
    sample = list(pairs)[:max_pairs]
    if not sample:
        raise ValueError("`pairs` is empty: no search can be chosen.")
    best, rows = None, []
    for search in searches or candidates():
        scores = translator.evaluate(sample, search=search)
        rows.append(
            {
                "beam size": search.beam_size,
                "length penalty": search.length_penalty,
                "validation BLEU": round(scores["bleu"], 2),
                "validation chrF": round(scores["chrf"], 2),
            }
        )
        if best is None or scores["bleu"] > best[1]:
            best = (search, scores["bleu"])
    return best[0], rows
