"""Generated entailment data whose labels follow from aligned words.

`make_synthetic_entailment` generates a small set whose labels follow from
how hypothesis words relate to the premise words they align to, with those
decisive word pairs as a ground truth for the attention.
`fit_arguments(count, seed)` gives its examples as the positional arguments
of `EntailmentClassifier.fit`.
"""

import dataclasses

import numpy as np

from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.examples import EntailmentExamples

# The synthetic world: one subject (a noun or its hypernym) with adjectives,
# doing one thing, in at most one place. Words of one group exclude each
# other: the nouns of a kind, the hypernyms (kinds), the two adjectives of a
# pair, the two verbs of a pair, the places.
HYPERNYMS = {
    **dict.fromkeys(
        (
            "dog",
            "cat",
            "horse",
            "cow",
            "sheep",
            "goat",
            "pig",
            "rabbit",
            "fox",
            "bear",
        ),
        "animal",
    ),
    **dict.fromkeys(("man", "woman", "boy", "girl"), "person"),
    **dict.fromkeys(("duck", "owl", "crow", "parrot", "hen", "swan"), "bird"),
}
KINDS = {
    kind: [noun for noun, k in HYPERNYMS.items() if k == kind]
    for kind in dict.fromkeys(HYPERNYMS.values())
}
ADJECTIVE_PAIRS = (
    ("big", "small"),
    ("old", "young"),
    ("happy", "sad"),
    ("clean", "dirty"),
    ("wet", "dry"),
)
VERB_PAIRS = (
    ("sleeps", "runs"),
    ("sits", "stands"),
    ("laughs", "cries"),
    ("smiles", "frowns"),
    ("whispers", "shouts"),
    ("arrives", "leaves"),
)
ANTONYMS = {
    **{a: b for a, b in ADJECTIVE_PAIRS + VERB_PAIRS},
    **{b: a for a, b in ADJECTIVE_PAIRS + VERB_PAIRS},
}
PLACES = {  # place -> its preposition
    "park": "in",
    "garden": "in",
    "forest": "in",
    "field": "in",
    "kitchen": "in",
    "house": "in",
    "beach": "on",
    "street": "on",
    "river": "near",
    "school": "at",
}


@dataclasses.dataclass(frozen=True)
class SyntheticEntailment:
    """Synthetic entailment examples with the word pairs that decide them.

    Attributes:
        examples: an `EntailmentExamples` of lower-case sentences, words
            separated by one space.
        cues: list (one per example) of lists of `(i, j)` int pairs: word
            `i` of the premise and word `j` of the hypothesis (0-based,
            whitespace words) whose relation decides the label.
            Contradiction: the one clashing pair (`dog`/`cat`,
            `animal`/`bird`, `sleeps`/`runs`, `big`/`small`,
            `park`/`beach`). Neutral: the one hypothesis word the premise
            does not support: `i = -1` when nothing in the premise aligns
            to it (an added adjective, or the place noun of an added place),
            else `i` is the hypernym it makes specific (`animal` -> `dog`).
            Entailment: every content word of the hypothesis (noun,
            adjectives, verb, place noun) with the premise word that
            supports it: the same word, or for a noun its hyponym
            (`dog` -> `animal`).
    """

    examples: EntailmentExamples
    cues: list


def make_synthetic_entailment(num_examples, seed=0):
    """Generates premise / hypothesis pairs whose labels follow from words.

    Each pair describes one scene `A`: a subject with adjectives doing
    something somewhere, e.g. `"the big old dog sleeps in the park"`. Both
    sentences leave details of `A` out: dropping an adjective or the place,
    or saying the hypernym instead of the noun (`dog` -> `animal`). The
    premise leaves out one detail `x`; the hypothesis leaves out one or two:

    - entailment: the hypothesis leaves out `x` too (and maybe another
      detail), so it says nothing the premise does not;
    - neutral: the hypothesis keeps `x`, a detail the premise does not
      mention: an added adjective or place, or a specific noun where the
      premise has its hypernym (`animal` -> `dog`);
    - contradiction: one word of the hypothesis is swapped for an
      incompatible one: a noun for another of its kind (`dog` -> `cat`),
      a hypernym or a noun for one of another kind (`animal` -> `bird`),
      a verb or adjective for its antonym (`sleeps` -> `runs`,
      `big` -> `small`), the place for another (`park` -> `beach`).

    So the label is decided by how aligned words relate, and never by one
    sentence alone: each sentence, premise or hypothesis, has the same
    distribution in all three classes (the same nouns, verbs, places, and
    as many details), so a linear classifier on the bags of words of the
    two sentences scores about chance (0.35 on new pairs, chance 1/3).
    The place phrase comes first or last independently in each sentence,
    so comparing words position by position does not work either.
    Sentences have 4 to 9 lower-case words from a vocabulary of 60
    (`HYPERNYMS` and their kinds, `ADJECTIVE_PAIRS`, `VERB_PAIRS`,
    `PLACES` and their prepositions, `"the"`).
    Labels are balanced: they cycle through seeded shuffles of the three.

    Args:
        num_examples: int, how many pairs.
        seed: int, seeds the NumPy generator; the same seed gives the same
            set. Defaults to `0`.

    Returns:
        A `SyntheticEntailment`.

    Example:

    >>> synthetic = make_synthetic_entailment(3, seed=0)
    >>> synthetic.examples.premises[0]
    'the young dry animal leaves on the beach'
    >>> synthetic.examples.hypotheses[0]
    'the young dry dog leaves'
    >>> LABELS[synthetic.examples.labels[0]]
    'neutral'
    >>> synthetic.cues[0]  # "dog" (word 3) specialises "animal" (word 3)
    [(3, 3)]
    """
    if not isinstance(num_examples, int) or num_examples < 0:
        raise ValueError(
            "`num_examples` must be a non-negative integer. "
            f"Received: num_examples={num_examples!r}"
        )
    rng = np.random.default_rng(seed)
    premises, hypotheses, labels, cues = [], [], [], []
    order = []
    while len(labels) < num_examples:
        if not order:  # a new shuffle of the three labels
            order = [int(label) for label in rng.permutation(len(LABELS))]
        label = order.pop()
        labels.append(label)
        premise, hypothesis, pairs = _synthetic_pair(rng, label)
        premise_words, premise_at = _render(premise, rng)
        hypothesis_words, hypothesis_at = _render(hypothesis, rng)
        premises.append(" ".join(premise_words))
        hypotheses.append(" ".join(hypothesis_words))
        cues.append(
            [
                (-1 if p is None else premise_at[p], hypothesis_at[h])
                for p, h in pairs
            ]
        )
    examples = EntailmentExamples(premises, hypotheses, labels)
    return SyntheticEntailment(examples=examples, cues=cues)


# A scene is a dict item -> word. Items: "noun", "verb", the index of each
# adjective pair present, and "place" if present.
_ORDER = (*range(len(ADJECTIVE_PAIRS)), "noun", "verb", "place")


def _random_scene(rng):
    """A full scene: a specific noun and at least three details (2 or 3
    adjectives, a place), so that leaving two out still leaves one."""
    kind = list(KINDS)[rng.integers(len(KINDS))]
    scene = {"noun": KINDS[kind][rng.integers(len(KINDS[kind]))]}
    num_adjectives = 2 + rng.integers(2)
    for pair in rng.permutation(len(ADJECTIVE_PAIRS))[:num_adjectives]:
        scene[int(pair)] = ADJECTIVE_PAIRS[pair][rng.integers(2)]
    scene["verb"] = VERB_PAIRS[rng.integers(len(VERB_PAIRS))][rng.integers(2)]
    if num_adjectives == 2 or rng.random() < 0.5:
        scene["place"] = list(PLACES)[rng.integers(len(PLACES))]
    return scene


def _leave_out(scene, items):
    """`scene` without the details `items` (the noun: its hypernym)."""
    scene = dict(scene)
    for item in items:
        if item == "noun":
            scene["noun"] = HYPERNYMS[scene["noun"]]
        else:
            del scene[item]
    return scene


def _pick(rng, items, k):
    """`k` distinct items of a list, in random order."""
    return [items[i] for i in rng.permutation(len(items))[:k]]


def _synthetic_pair(rng, label):
    """A premise scene, a hypothesis scene with `label`, and the cues as
    `(premise item or None, hypothesis item)` pairs.

    The premise leaves out one detail `x` of a full scene, the hypothesis
    a set `Y` of one or two. `x` is uniform over the details; `Y` is a
    uniform set of its size in every class, since `x` is: entailment takes
    `Y = {x}` or `{x, y}`, neutral a set without `x`, contradiction any
    set. So neither sentence alone tells the class.
    """
    scene = _random_scene(rng)
    details = [k for k in scene if k != "verb"]
    (x,) = _pick(rng, details, 1)
    size = 1 + rng.integers(2)
    if label == 0:
        others = [k for k in details if k != x]
        leave_out = [x] + _pick(rng, others, size - 1)
    elif label == 1:
        leave_out = _pick(rng, [k for k in details if k != x], size)
    else:
        leave_out = _pick(rng, details, size)
    premise = _leave_out(scene, [x])
    hypothesis = _leave_out(scene, leave_out)
    if label == 0:
        cues = [(k, k) for k in _ORDER if k in hypothesis]
    elif label == 1:
        cues = [(None if x != "noun" else "noun", x)]
    else:
        item = _clash(rng, premise, hypothesis)
        cues = [(item, item)]
    return premise, hypothesis, cues


def _clash(rng, premise, hypothesis):
    """Swaps a word of `hypothesis` that the premise has too (the noun or
    the verb, an adjective, the place) for an incompatible one, each word
    for a uniform choice among its rivals, so the hypothesis words keep
    their distribution; returns the item."""
    adjectives = [k for k in hypothesis if isinstance(k, int) and k in premise]
    places = ["place"] if "place" in hypothesis and "place" in premise else []
    (options,) = _pick(
        rng, [o for o in (["noun", "verb"], adjectives, places) if o], 1
    )
    (item,) = _pick(rng, options, 1)
    word = hypothesis[item]
    if item == "noun":
        if word in KINDS or premise["noun"] in KINDS:
            # A hypernym on either side: change the kind.
            kind = HYPERNYMS.get(word, word)
            (other,) = _pick(rng, [k for k in KINDS if k != kind], 1)
            if word in KINDS:
                hypothesis[item] = other
            else:
                (hypothesis[item],) = _pick(rng, KINDS[other], 1)
        else:
            kind = KINDS[HYPERNYMS[word]]
            (hypothesis[item],) = _pick(rng, [w for w in kind if w != word], 1)
    elif item == "place":
        (hypothesis[item],) = _pick(rng, [w for w in PLACES if w != word], 1)
    else:
        hypothesis[item] = ANTONYMS[word]
    return item


def _render(scene, rng):
    """The words of a scene, and the word index of each item. The place
    phrase comes first with probability 0.3."""
    words, at = ["the"], {}
    for item in _ORDER:
        if item in scene and item != "place":
            at[item] = len(words)
            words.append(scene[item])
    if "place" in scene:
        phrase = [PLACES[scene["place"]], "the", scene["place"]]
        if rng.random() < 0.3:
            at = {item: i + len(phrase) for item, i in at.items()}
            words = phrase + words
            at["place"] = 2
        else:
            at["place"] = len(words) + 2
            words += phrase
    return words, at


def fit_arguments(count, seed=0):
    """`count` generated examples as the positional arguments of
    `EntailmentClassifier.fit`: a tuple `(examples,)`."""
    return (make_synthetic_entailment(count, seed=seed).examples,)
