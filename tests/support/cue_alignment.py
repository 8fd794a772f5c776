"""How often an entailment model's alignment links the word pairs that
decide a generated example (`make_synthetic_entailment`'s cues: a word
and its hypernym, two clashing words, ...)."""

import numpy as np

from attention_zoo_apps.entailment.synthetic import make_synthetic_entailment


def cue_hits(classifier, count=300, seed=4):
    """`(hits, chance)` over `count` new generated examples: how many cue
    words of the premise have their strongest alignment on the cue word
    of the hypothesis, and how many a uniform guess over the hypothesis
    would hit."""
    test = make_synthetic_entailment(count, seed=seed)
    result = classifier.predict(
        test.examples.premises, test.examples.hypotheses
    )
    hits = chance = 0.0
    for weights, cues in zip(result["alignment"], test.cues):
        for premise_word, hypothesis_word in cues:
            if premise_word >= 0:  # -1: a word the premise does not have
                hits += np.argmax(weights[premise_word]) == hypothesis_word
                chance += 1.0 / weights.shape[1]
    return hits, chance
