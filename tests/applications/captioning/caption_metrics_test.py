"""Caption metrics: hand-worked BLEU, sacrebleu agreement, CIDEr-D reference."""

import math
import random

import numpy as np
import pytest
import sacrebleu

from attention_zoo_apps.captioning.metrics import caption_metrics
from attention_zoo_apps.captioning.metrics import cider_scores
from attention_zoo_apps.captioning.metrics import corpus_bleu
from attention_zoo_apps.captioning.metrics import corpus_cider
from attention_zoo_apps.captioning.metrics import exact_match
from attention_zoo_apps.captioning.metrics import tokenize_caption

# Five images, two to four references of different lengths each, already
# tokenized (lower case, no punctuation), so `.split()` gives the tokens.
CORPUS_REFERENCES = [
    [
        "a man rides a brown horse on the beach",
        "a person riding a horse",
        "a man on horseback near the ocean waves at sunset",
    ],
    [
        "two dogs play with a red ball on the grass",
        "dogs playing in a park",
    ],
    [
        "a red bus drives down a city street",
        "a double-decker bus on the street",
        "a bus",
        "a large red bus parked next to a sidewalk in the city",
    ],
    [
        "a cat sleeps on a sofa",
        "a grey cat lying on the couch next to a pillow",
    ],
    [
        "a plate of food with rice and vegetables",
        "a white plate with rice broccoli and chicken on a table",
        "food on a plate",
    ],
]
CORPUS_HYPOTHESES = [
    "a man rides a horse on the beach",
    "a dog plays with a ball on the grass",
    "a red bus on a city street",
    "a cat on a sofa next to a pillow",
    "a plate of rice and chicken",
]

# n-grams repeated beyond their count in any reference: CIDEr-D clips them.
REPETITIVE_HYPOTHESES = [
    "a man a man rides a horse a horse",
    "dogs dogs dogs play play on the grass",
    "a red bus",
    "a cat on a sofa on a sofa on a sofa",
    "rice rice and chicken on a plate",
]


def reference_cider(hypotheses, references, sigma=6.0):
    """CIDEr-D from Vedantam et al. (2015), coco-caption's variant, by loops.

    Token lists in; n-grams as space-joined strings; document frequency
    counted image by image over the references.
    """

    def grams(tokens, n):
        return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]

    num_images = len(hypotheses)

    def weights(tokens, n):
        out = {}
        for gram in set(grams(tokens, n)):
            tf = grams(tokens, n).count(gram)
            df = 0
            for image_refs in references:
                if any(gram in grams(ref, n) for ref in image_refs):
                    df += 1
            out[gram] = tf * np.log(num_images / max(df, 1))
        return out

    scores = []
    for hyp, refs in zip(hypotheses, references):
        per_order = []
        for n in range(1, 5):
            h = weights(hyp, n)
            sims = []
            for ref in refs:
                r = weights(ref, n)
                norm_h = np.sqrt(sum(v * v for v in h.values()))
                norm_r = np.sqrt(sum(v * v for v in r.values()))
                dot = sum(min(h[g], r.get(g, 0.0)) * r.get(g, 0.0) for g in h)
                cosine = dot / (norm_h * norm_r) if norm_h and norm_r else 0.0
                penalty = np.exp(-((len(hyp) - len(ref)) ** 2) / (2 * sigma**2))
                sims.append(cosine * penalty)
            per_order.append(np.mean(sims))
        scores.append(10.0 * np.mean(per_order))
    return np.array(scores)


def random_corpus(seed, several_references):
    """Captions over a small vocabulary; hypotheses are edited references."""
    rng = random.Random(seed)
    vocab = "a man dog red ball on the grass with two people street".split()
    hypotheses, references = [], []
    for _ in range(rng.randint(5, 15)):
        num_refs = rng.randint(2, 5) if several_references else 1
        refs = [
            " ".join(rng.choice(vocab) for _ in range(rng.randint(3, 14)))
            for _ in range(num_refs)
        ]
        # Keep most words of the first reference, change some, add some.
        hyp = [
            word if rng.random() < 0.8 else rng.choice(vocab)
            for word in refs[0].split()
            if rng.random() < 0.9
        ]
        hyp += [rng.choice(vocab) for _ in range(rng.randint(0, 3))]
        hypotheses.append(" ".join(hyp))
        references.append(refs)
    return hypotheses, references


def reference_streams(references):
    """sacrebleu's layout: one stream per reference slot, None if missing."""
    width = max(len(refs) for refs in references)
    return [
        [refs[j] if j < len(refs) else None for refs in references]
        for j in range(width)
    ]


# --- tokenization -----------------------------------------------------------


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("A Dog runs.", ["a", "dog", "runs"]),
        (
            "A man's dog, isn't it?",
            ["a", "man", "'s", "dog", "is", "n't", "it"],
        ),
        (
            'A (red) "double-decker" bus... on; the: street!',
            ["a", "red", "double-decker", "bus", "on", "the", "street"],
        ),
        (
            "3.5 kg at 10:30, 1,000 people",
            ["3.5", "kg", "at", "10:30", "1,000", "people"],
        ),
        (
            "Mr. Smith\u2019s \u201cbig\u201d dog & 'quoted' dogs' o'clock",
            ["mr", "smith", "'s", "big", "dog", "&", "quoted", "dogs"]
            + ["o'clock"],
        ),
        ("well--known - `x`", ["well", "known", "x"]),
        ("a dog\u2026 runs [left]", ["a", "dog", "runs", "left"]),
        (" -- ... ", []),
        ("", []),
    ],
)
def test_tokenize_caption(text, tokens):
    assert tokenize_caption(text) == tokens
    # Idempotent: already tokenized text is left alone.
    assert tokenize_caption(" ".join(tokens)) == tokens


def test_tokenize_caption_rejects_non_strings():
    with pytest.raises(TypeError, match="caption must be a str"):
        tokenize_caption(["a", "dog"])


# --- BLEU by hand -----------------------------------------------------------


def test_bleu_hand_worked_missing_four_gram():
    # hyp "a cat sits on the mat" (6), ref "a cat is on the mat" (6): BP = 1.
    # 1-grams: a cat sits on the mat -> 5 of 6 in the ref (not "sits").
    # 2-grams: "a cat" "cat sits" "sits on" "on the" "the mat" -> 3 of 5.
    # 3-grams: "a cat sits" "cat sits on" "sits on the" "on the mat" -> 1/4.
    # 4-grams: none of the 3 in the ref -> BLEU-4 = 0.
    scores = corpus_bleu(["a cat sits on the mat"], [["a cat is on the mat"]])
    assert scores["bleu_1"] == pytest.approx(100 * 5 / 6)
    assert scores["bleu_2"] == pytest.approx(100 * math.sqrt(5 / 6 * 3 / 5))
    # (5/6 * 3/5 * 1/4) ** (1/3) = 0.125 ** (1/3) = 0.5
    assert scores["bleu_3"] == pytest.approx(50.0)
    assert scores["bleu_4"] == 0.0


def test_bleu_clips_counts_at_the_largest_count_in_one_reference():
    # Papineni et al.'s example: "the" x7; "the" occurs at most twice in one
    # reference, so p1 = 2/7. Closest ref length to 7: 7 (not 6): BP = 1.
    # No "the the" in any reference: BLEU-2 = 0.
    scores = corpus_bleu(
        ["the the the the the the the"],
        [["the cat is on the mat", "there is a cat on the mat"]],
    )
    assert scores["bleu_1"] == pytest.approx(100 * 2 / 7)
    assert scores["bleu_2"] == 0.0


def test_bleu_sums_counts_over_the_corpus():
    # Image 1 as in the missing four-gram test: matches 5, 3, 1, 0 of 6, 5,
    # 4, 3. Image 2 identical: 3, 2, 1, 0 of 3, 2, 1, 0. Corpus precisions
    # 8/9, 5/7, 2/5, 0/3 (not the mean of the sentence scores); c = r = 9.
    scores = corpus_bleu(
        ["a cat sits on the mat", "the dog runs"],
        [["a cat is on the mat"], ["the dog runs"]],
    )
    expected = [8 / 9, 5 / 7, 2 / 5]
    for n in (1, 2, 3):
        geometric = math.exp(np.mean(np.log(expected[:n])))
        assert scores[f"bleu_{n}"] == pytest.approx(100 * geometric)
    assert scores["bleu_4"] == 0.0


def test_bleu_identical_captions_score_100():
    hypotheses = ["a man rides a horse on the beach", "two dogs play"]
    scores = corpus_bleu(
        hypotheses, [[h, "something else"] for h in hypotheses]
    )
    assert scores == pytest.approx({f"bleu_{n}": 100.0 for n in range(1, 5)})


def test_bleu_brevity_penalty_for_a_short_hypothesis():
    # hyp "a cat" (c = 2), ref length r = 5: p1 = p2 = 1, BP = exp(1 - 5/2).
    # No 3-grams in the hypothesis: BLEU-3 and BLEU-4 are 0, not an error.
    scores = corpus_bleu(["a cat"], [["a cat on the mat"]])
    assert scores["bleu_1"] == pytest.approx(100 * math.exp(-1.5))
    assert scores["bleu_2"] == pytest.approx(100 * math.exp(-1.5))
    assert scores["bleu_3"] == 0.0
    assert scores["bleu_4"] == 0.0


def test_bleu_closest_reference_length_prefers_the_shorter_on_a_tie():
    # Hypothesis of 4 words, references of 3 and 5: both 1 away; the shorter
    # (3) gives c > r and BP = 1 (the longer would give exp(1 - 5/4)).
    scores = corpus_bleu(["a cat on mat"], [["a cat on the mat", "a cat sat"]])
    assert scores["bleu_1"] == pytest.approx(100.0)


def test_bleu_tokenizes_before_counting():
    plain = corpus_bleu(["a cat on the mat"], [["a cat is on the mat"]])
    raw = corpus_bleu(["A cat, on the mat."], [["A CAT is on the mat!"]])
    assert raw == plain


def test_bleu_max_order():
    scores = corpus_bleu(["a cat on the mat"], [["a cat is on the mat"]], 2)
    assert sorted(scores) == ["bleu_1", "bleu_2"]
    with pytest.raises(ValueError, match="max_order"):
        corpus_bleu(["a"], [["a"]], max_order=0)


# --- BLEU against sacrebleu -------------------------------------------------


@pytest.mark.parametrize("several_references", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bleu_4_matches_sacrebleu(seed, several_references):
    hypotheses, references = random_corpus(seed, several_references)
    expected = sacrebleu.corpus_bleu(
        hypotheses,
        reference_streams(references),
        tokenize="none",
        smooth_method="none",
    )
    assert expected.score > 0  # the comparison covers all four precisions
    scores = corpus_bleu(hypotheses, references)
    assert scores["bleu_4"] == pytest.approx(expected.score, rel=1e-9)


@pytest.mark.parametrize("several_references", [False, True])
def test_bleu_1_to_3_match_sacrebleu(several_references):
    hypotheses, references = random_corpus(3, several_references)
    scores = corpus_bleu(hypotheses, references)
    streams = reference_streams(references)
    for n in (1, 2, 3):
        metric = sacrebleu.metrics.BLEU(
            max_ngram_order=n, tokenize="none", smooth_method="none"
        )
        expected = metric.corpus_score(hypotheses, streams).score
        assert scores[f"bleu_{n}"] == pytest.approx(expected, rel=1e-9)


def test_bleu_matches_sacrebleu_on_a_brevity_penalty_and_a_tie():
    # Lengths 2 vs refs 5 and 4 (closest 4); 4 vs refs 5 and 3 (tie -> 3):
    # c = 6 < r = 7, so BP = exp(1 - 7/6) (exp(1 - 9/6) with the longer on
    # the tie). Every hypothesis word is in a reference: p1 = 6/6.
    hypotheses = ["a cat", "a cat on mat"]
    references = [
        ["a cat on the mat", "the cat sat on"],
        ["a cat on the mat", "a cat sat"],
    ]
    scores = corpus_bleu(hypotheses, references)
    assert scores["bleu_1"] == pytest.approx(100 * math.exp(1 - 7 / 6))
    streams = reference_streams(references)
    for n in (1, 2):
        metric = sacrebleu.metrics.BLEU(
            max_ngram_order=n, tokenize="none", smooth_method="none"
        )
        expected = metric.corpus_score(hypotheses, streams).score
        assert scores[f"bleu_{n}"] == pytest.approx(expected, rel=1e-9)


# --- CIDEr-D ----------------------------------------------------------------


@pytest.mark.parametrize(
    "hypotheses, sigma",
    [
        (CORPUS_HYPOTHESES, 6.0),
        (CORPUS_HYPOTHESES, 2.0),
        (REPETITIVE_HYPOTHESES, 6.0),
    ],
)
def test_cider_matches_reference_implementation(hypotheses, sigma):
    expected = reference_cider(
        [h.split() for h in hypotheses],
        [[r.split() for r in refs] for refs in CORPUS_REFERENCES],
        sigma=sigma,
    )
    assert np.all(expected > 0)
    scores = cider_scores(hypotheses, CORPUS_REFERENCES, sigma=sigma)
    assert scores.shape == (len(hypotheses),)
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    assert corpus_cider(
        hypotheses, CORPUS_REFERENCES, sigma=sigma
    ) == pytest.approx(float(np.mean(expected)), rel=1e-12)


def test_cider_identical_caption_with_distinct_references_scores_10():
    # One reference per image, no n-gram shared between the images: every
    # idf is log(2 / 1) > 0, every cosine 1, no length difference: 10.
    captions = ["a man rides a horse", "two dogs play outside"]
    scores = cider_scores(captions, [[c] for c in captions])
    np.testing.assert_allclose(scores, [10.0, 10.0])


def test_cider_ngrams_in_every_image_carry_no_weight():
    # idf = log(N / df) = 0 when every image's references hold the n-gram,
    # and so for every n-gram of a one-image corpus.
    same = ["a man rides a horse"] * 2
    np.testing.assert_array_equal(cider_scores(same, [[c] for c in same]), 0)
    assert corpus_cider(["a dog"], [["a dog"]]) == 0.0


def test_cider_identical_captions_score_higher_than_partial_matches():
    exact = cider_scores(
        [refs[0] for refs in CORPUS_REFERENCES], CORPUS_REFERENCES
    )
    partial = cider_scores(CORPUS_HYPOTHESES, CORPUS_REFERENCES)
    wrong = cider_scores(
        CORPUS_HYPOTHESES[1:] + CORPUS_HYPOTHESES[:1], CORPUS_REFERENCES
    )
    assert np.all(exact > partial)
    assert np.all(partial > wrong)


def test_cider_length_penalty_lowers_a_longer_hypothesis():
    # Words added to a hypothesis add n-grams too, so isolate the penalty:
    # with sigma = 1e9 the Gaussian is 1, and the score with sigma = 6 is
    # exactly exp(-delta^2 / 72) of it (delta: hypothesis minus reference
    # length), 1 for an equal length.
    references = [["a man rides a horse"], ["two dogs play on the grass"]]
    equal_length = ["a man rides a horse", "two dogs play on grass"]
    longer = ["a man rides a big brown horse", "two dogs play on grass"]
    for hypotheses, delta in ((equal_length, 0), (longer, 2)):
        penalised = cider_scores(hypotheses, references, sigma=6.0)
        unpenalised = cider_scores(hypotheses, references, sigma=1e9)
        ratio = penalised[0] / unpenalised[0]
        assert ratio == pytest.approx(math.exp(-(delta**2) / (2 * 36.0)))
    assert (
        cider_scores(longer, references)[0]
        < cider_scores(equal_length, references)[0]
    )


def test_cider_is_invariant_to_the_order_of_images_and_references():
    scores = cider_scores(CORPUS_HYPOTHESES, CORPUS_REFERENCES)
    order = [3, 0, 4, 2, 1]
    permuted = cider_scores(
        [CORPUS_HYPOTHESES[i] for i in order],
        [CORPUS_REFERENCES[i][::-1] for i in order],
    )
    np.testing.assert_allclose(permuted, scores[order], rtol=1e-12)


@pytest.mark.parametrize("empty", ["", " ... "])
def test_empty_hypothesis_scores_zero(empty):
    hypotheses = [empty] + CORPUS_HYPOTHESES[1:]
    scores = cider_scores(hypotheses, CORPUS_REFERENCES)
    assert scores[0] == 0.0
    assert np.all(np.isfinite(scores)) and np.all(scores[1:] > 0)
    everything_empty = caption_metrics([""] * 2, CORPUS_REFERENCES[:2])
    assert everything_empty == {
        "bleu_1": 0.0,
        "bleu_2": 0.0,
        "bleu_3": 0.0,
        "bleu_4": 0.0,
        "cider": 0.0,
    }


def test_caption_metrics_combines_bleu_and_cider():
    metrics = caption_metrics(CORPUS_HYPOTHESES, CORPUS_REFERENCES)
    expected = corpus_bleu(CORPUS_HYPOTHESES, CORPUS_REFERENCES)
    expected["cider"] = corpus_cider(CORPUS_HYPOTHESES, CORPUS_REFERENCES)
    assert metrics == expected
    assert all(isinstance(value, float) for value in metrics.values())


# --- errors -----------------------------------------------------------------

METRICS = [corpus_bleu, cider_scores, corpus_cider, caption_metrics]


@pytest.mark.parametrize("metric", METRICS)
def test_length_mismatch_raises(metric):
    with pytest.raises(ValueError, match="2 hypotheses and 3 reference"):
        metric(["a dog", "a cat"], [["a dog"], ["a cat"], ["a cow"]])


@pytest.mark.parametrize("metric", METRICS)
def test_image_without_references_raises_with_its_index(metric):
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        metric(["a dog", "a cat", "a cow"], [["a dog"], [], ["a cow"]])


@pytest.mark.parametrize("metric", METRICS)
def test_bad_corpus_types_raise(metric):
    with pytest.raises(TypeError, match=r"references\[0\] must be a list"):
        metric(["a dog"], ["a dog"])
    with pytest.raises(TypeError, match="`hypotheses` must be a list"):
        metric("a dog", [["a dog"]])
    with pytest.raises(ValueError, match="corpus is empty"):
        metric([], [])


def test_bad_sigma_raises():
    with pytest.raises(ValueError, match="sigma"):
        cider_scores(["a dog"], [["a dog"]], sigma=0.0)


def test_exact_match_compares_tokenized_captions():
    hypotheses = ["A dog runs.", "a cat", "two men"]
    references = [["a dog runs"], ["a dog", "A cat!"], ["one man"]]
    assert exact_match(hypotheses, references) == pytest.approx(2 / 3)
    assert exact_match([], []) == 0.0
