"""The generated entailment set: labels follow from aligned words."""

import collections

import numpy as np
import pytest

from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.examples import EntailmentExamples
from attention_zoo_apps.entailment.synthetic import fit_arguments
from attention_zoo_apps.entailment.synthetic import make_synthetic_entailment

# The synthetic world, written again from the docstring: noun -> kind.
KIND = {
    **dict.fromkeys(
        "dog cat horse cow sheep goat pig rabbit fox bear".split(), "animal"
    ),
    **dict.fromkeys("man woman boy girl".split(), "person"),
    **dict.fromkeys("duck owl crow parrot hen swan".split(), "bird"),
}
OPPOSITE = dict(
    pair
    for a, b in [
        ("big", "small"),
        ("old", "young"),
        ("happy", "sad"),
        ("clean", "dirty"),
        ("wet", "dry"),
        ("sleeps", "runs"),
        ("sits", "stands"),
        ("laughs", "cries"),
        ("smiles", "frowns"),
        ("whispers", "shouts"),
        ("arrives", "leaves"),
    ]
    for pair in [(a, b), (b, a)]
)
VERBS = {"sleeps", "sits", "laughs", "smiles", "whispers", "arrives"}
VERBS |= {OPPOSITE[v] for v in VERBS}
ADJECTIVES = set(OPPOSITE) - VERBS
PLACES = set(
    "park garden forest field kitchen house beach street river".split()
)
PLACES.add("school")
FUNCTION_WORDS = {"the", "in", "on", "near", "at"}


def _parse(sentence):
    """`{"noun": w, "verb": w, "place": w?, "adjectives": {w, ...}}`."""
    words = sentence.split()
    scene = {"adjectives": set()}
    for word in words:
        if word in ADJECTIVES:
            scene["adjectives"].add(word)
        elif word in KIND or word in set(KIND.values()):
            assert "noun" not in scene, sentence
            scene["noun"] = word
        elif word in VERBS:
            scene["verb"] = word
        elif word in PLACES:
            scene["place"] = word
        else:
            assert word in FUNCTION_WORDS, word
    return scene


def _implied(premise_word, hypothesis_word):
    return hypothesis_word in (premise_word, KIND.get(premise_word))


def _clashes(p, h):
    if h == OPPOSITE.get(p):
        return True
    if p in PLACES and h in PLACES:
        return p != h
    if p in KIND and h in KIND and KIND[p] == KIND[h]:
        return p != h  # two of one kind
    nouns = set(KIND) | set(KIND.values())
    return p in nouns and h in nouns and KIND.get(p, p) != KIND.get(h, h)


def _relation(premise, hypothesis):
    """The label of a pair, from its words (independent of the generator)."""
    p, h = _parse(premise), _parse(hypothesis)
    p_words = p["adjectives"] | {p["noun"], p["verb"], p.get("place")}
    h_words = h["adjectives"] | {h["noun"], h["verb"], h.get("place")}
    if any(_clashes(a, b) for a in p_words for b in h_words if a and b):
        return "contradiction"
    supported = h["adjectives"] <= p["adjectives"] and _implied(
        p["noun"], h["noun"]
    )
    supported &= h.get("place") in (None, p.get("place"))
    return "entailment" if supported else "neutral"


@pytest.fixture(scope="module")
def synthetic():
    return make_synthetic_entailment(3000, seed=1)


def test_synthetic_labels_follow_from_the_words(synthetic):
    examples = synthetic.examples
    assert examples.label_counts() == dict.fromkeys(LABELS, 1000)
    for premise, hypothesis, label in zip(
        examples.premises, examples.hypotheses, examples.labels
    ):
        assert _relation(premise, hypothesis) == LABELS[label], (
            premise,
            hypothesis,
        )


def test_synthetic_sentences_are_short_lower_case_words(synthetic):
    sentences = synthetic.examples.premises + synthetic.examples.hypotheses
    lengths = collections.Counter(len(s.split()) for s in sentences)
    assert min(lengths) == 4 and max(lengths) == 9
    vocabulary = {word for s in sentences for word in s.split()}
    assert 55 <= len(vocabulary) <= 100
    assert all(s == s.lower() and s == " ".join(s.split()) for s in sentences)
    # The place phrase comes first in some sentences, last in others.
    fronted = sum(s.split()[0] != "the" for s in sentences)
    placed = sum(any(w in PLACES for w in s.split()) for s in sentences)
    assert 0.2 < fronted / placed < 0.4


def test_synthetic_cues_point_at_the_deciding_words(synthetic):
    examples = synthetic.examples
    kinds = set(KIND.values())
    for premise, hypothesis, label, cues in zip(
        examples.premises, examples.hypotheses, examples.labels, synthetic.cues
    ):
        p, h = premise.split(), hypothesis.split()
        pairs = [(p[i] if i >= 0 else None, h[j]) for i, j in cues]
        label = LABELS[label]
        if label == "contradiction":
            ((a, b),) = pairs
            assert a and _clashes(a, b), (premise, hypothesis, cues)
        elif label == "neutral":
            ((a, b),) = pairs
            if a is None:  # an added detail: nothing in the premise aligns
                assert b in ADJECTIVES | PLACES and b not in p
            else:  # a hypernym made specific
                assert a in kinds and KIND[b] == a
        else:
            # Every content word of the hypothesis, once, with its support.
            content = [j for j, w in enumerate(h) if w not in FUNCTION_WORDS]
            assert sorted(j for _, j in cues) == content
            assert all(a == b or KIND.get(a) == b for a, b in pairs)
    # The hypernym cues exist in both directions.
    hypernym_cues = collections.Counter()
    for premise, hypothesis, label, cues in zip(
        examples.premises, examples.hypotheses, examples.labels, synthetic.cues
    ):
        for i, j in cues:
            a, b = premise.split()[i] if i >= 0 else "", hypothesis.split()[j]
            if KIND.get(a) == b or KIND.get(b) == a:
                hypernym_cues[LABELS[label]] += 1
    assert hypernym_cues["entailment"] > 50 and hypernym_cues["neutral"] > 50


def test_synthetic_set_is_deterministic():
    a = make_synthetic_entailment(40, seed=5)
    assert a == make_synthetic_entailment(40, seed=5)
    assert a.examples.premises != (
        make_synthetic_entailment(40, seed=6).examples.premises
    )
    prefix = make_synthetic_entailment(17, seed=5)
    assert prefix.examples == a.examples.select(range(17))
    assert prefix.cues == a.cues[:17]
    assert len(make_synthetic_entailment(0).examples) == 0
    with pytest.raises(ValueError, match="num_examples=-1"):
        make_synthetic_entailment(-1)


def test_synthetic_sentences_alone_do_not_tell_the_label(synthetic):
    examples = synthetic.examples
    for side in (examples.premises, examples.hypotheses):
        bags = collections.defaultdict(set)
        for sentence, label in zip(side, examples.labels):
            bags[tuple(sorted(sentence.split()))].add(label)
        # Many bags of words occur with several labels...
        assert sum(len(labels) > 1 for labels in bags.values()) > 50
        # ...and every noun, verb and place occurs in all three classes.
        classes = collections.defaultdict(set)
        for sentence, label in zip(side, examples.labels):
            for word in sentence.split():
                classes[word].add(label)
        assert all(len(labels) == 3 for labels in classes.values())


def _linear_classifier(x, y, l2=1.0):
    """Ridge regression onto one-hot labels (a linear classifier in one
    solve); returns the scoring function."""
    x = np.hstack([x, np.ones((len(x), 1))])
    weights = np.linalg.solve(
        x.T @ x + l2 * np.eye(x.shape[1]), x.T @ np.eye(3)[y]
    )
    return lambda z: np.hstack([z, np.ones((len(z), 1))]) @ weights


def test_synthetic_bag_of_words_per_sentence_is_at_chance():
    """A linear classifier on the word counts of the premise and of the
    hypothesis (two separate bags) learns nothing that carries over to new
    examples (it scores about 0.35, chance is 1/3), while relating the
    words gets every label right."""
    train = make_synthetic_entailment(3000, seed=2).examples
    test = make_synthetic_entailment(3000, seed=3).examples
    vocabulary = sorted(
        {w for s in train.premises + train.hypotheses for w in s.split()}
    )
    index = {word: i for i, word in enumerate(vocabulary)}

    def bags(sentences):
        x = np.zeros((len(sentences), len(vocabulary)))
        for n, sentence in enumerate(sentences):
            for word in sentence.split():
                x[n, index[word]] += 1
        return x

    def accuracy(features):
        model = _linear_classifier(features(train), np.array(train.labels))
        predictions = model(features(test)).argmax(1)
        return (predictions == np.array(test.labels)).mean()

    def separate(examples):
        return np.hstack([bags(examples.premises), bags(examples.hypotheses)])

    assert accuracy(separate) < 0.4  # chance: 1/3
    # The same pairs labelled by aligning words: always right.
    relation = [_relation(p, h) for p, h in zip(test.premises, test.hypotheses)]
    assert relation == [LABELS[label] for label in test.labels]


def test_fit_arguments_are_the_generated_examples():
    (examples,) = fit_arguments(12, seed=4)
    assert isinstance(examples, EntailmentExamples)
    assert examples == make_synthetic_entailment(12, seed=4).examples
    assert fit_arguments(12)[0] == make_synthetic_entailment(12).examples
