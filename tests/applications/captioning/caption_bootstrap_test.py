"""`bootstrap.ResampledCorpus` scores a resample of the images as
`caption_metrics` scores the resampled captions, and `paired_bootstrap`
gives the intervals of scoring every resample from its captions."""

import numpy as np
import pytest

from attention_zoo_apps.captioning.bootstrap import ResampledCorpus
from attention_zoo_apps.captioning.bootstrap import paired_bootstrap
from attention_zoo_apps.captioning.metrics import caption_metrics

WORDS = ["dog", "cat", "runs", "on", "grass", "the", "red", "ball"]


def _caption(rng, shortest):
    # "a" starts every reference: an n-gram in every image's references,
    # whose inverse document frequency is 0.
    words = rng.choice(WORDS, size=rng.integers(shortest, 9))
    return " ".join(words)


def _corpus(seed, images=14):
    rng = np.random.default_rng(seed)
    references = [
        ["a " + _caption(rng, 1) for _ in range(rng.integers(1, 6))]
        for _ in range(images)
    ]
    first = [_caption(rng, 0) for _ in range(images)]  # some empty
    # The second captioner copies a reference of every other image.
    second = [
        refs[0] if i % 2 else _caption(rng, 2)
        for i, refs in enumerate(references)
    ]
    return first, second, references


def _scores(hypotheses, references, index):
    scores = caption_metrics(
        [hypotheses[i] for i in index], [references[i] for i in index]
    )
    return np.array([scores["bleu_4"], scores["cider"]])


@pytest.mark.parametrize("which", [0, 1])
def test_a_resample_scores_as_its_captions_do(which):
    captions = _corpus(0)
    hypotheses, references = captions[which], captions[2]
    corpus = ResampledCorpus(hypotheses, references)
    rng = np.random.default_rng(1)
    count = len(references)
    for draw in [np.arange(count)] + [
        rng.integers(0, count, count) for _ in range(40)
    ]:
        weights = np.bincount(draw, minlength=count)
        expected = _scores(hypotheses, references, draw)
        assert corpus.scores(weights) == pytest.approx(expected, rel=1e-9)
    assert _scores(hypotheses, references, range(count))[1] > 0


def test_paired_bootstrap_is_the_bootstrap_of_the_captions_scores():
    first, second, references = _corpus(2)
    difference, low, high = paired_bootstrap(
        first, second, references, 60, seed=5
    )
    count = len(references)
    rng = np.random.default_rng(5)
    resampled = []
    for _ in range(60):
        index = rng.integers(0, count, count)
        resampled.append(
            _scores(first, references, index)
            - _scores(second, references, index)
        )
    expected_low, expected_high = np.percentile(resampled, [2.5, 97.5], 0)
    everything = range(count)
    observed = _scores(first, references, everything) - _scores(
        second, references, everything
    )
    assert difference == pytest.approx(observed, rel=1e-9, abs=1e-12)
    assert low == pytest.approx(expected_low, rel=1e-9, abs=1e-12)
    assert high == pytest.approx(expected_high, rel=1e-9, abs=1e-12)
    assert (low < difference).all() and (difference < high).all()
