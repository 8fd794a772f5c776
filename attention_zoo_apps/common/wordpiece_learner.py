"""Learning a WordPiece vocabulary from raw text (`SubwordTokenizer.train`).

`count_words` counts the words of an iterable of strings, split in batches
exactly as the tokenizer splits them; `learn_vocabulary` runs TensorFlow
Text's WordPiece learner on the counts with a cheaper threshold search
than the library's own `learn`.
"""

import collections

import numpy as np
from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner,
)


def count_words(texts, split, batch_size=8192):
    """`{word: count}` over `texts`, split by `split(batch) -> ragged words`.

    Args:
        texts: iterable of str.
        split: callable, a list of str -> a ragged string tensor of words
            (`wordpiece.split_words` with the tokenizer's options).
        batch_size: int, strings split per call.
    """
    counts = collections.Counter()
    for batch in _batches(texts, batch_size):
        unique, number = np.unique(
            split(batch).flat_values.numpy(), return_counts=True
        )
        counts.update(dict(zip(unique.tolist(), number.tolist())))
    return {word.decode("utf-8"): count for word, count in counts.items()}


def learn_vocabulary(
    word_counts, vocabulary_size, reserved_tokens, joiner, **overrides
):
    """Word counts -> (vocabulary list, number of thresholds tried).

    Args:
        word_counts: dict of word (str) -> count.
        vocabulary_size: int, the largest vocabulary wanted.
        reserved_tokens: the tokens that come first, in id order.
        joiner: str, the prefix of continuation pieces (`"##"`).
        **overrides: the learner's parameters to change (`learn_params`
            of `SubwordTokenizer.train`).

    TensorFlow Text's learner, with a cheaper threshold search. The
    vocabulary size shrinks as the threshold grows; we look for a threshold
    whose vocabulary is within `slack_ratio` below `vocabulary_size`, or the
    smallest one that fits.
    """
    defaults = dict(
        upper_thresh=int(1e7),
        lower_thresh=10,
        num_iterations=4,
        max_input_tokens=int(5e6),
        max_token_length=50,
        max_unique_chars=1000,
        slack_ratio=0.05,
        include_joiner_token=True,
        joiner=joiner,
    )
    unknown = set(overrides) - set(defaults)
    if unknown:
        raise ValueError(
            f"Unknown `learn_params` keys {sorted(unknown)}; expected some "
            f"of {sorted(defaults)}. Received: learn_params={overrides}"
        )
    defaults.update(overrides)
    params = learner.Params(
        vocab_size=vocabulary_size,
        reserved_tokens=list(reserved_tokens),
        **defaults,
    )
    word_counts = list(word_counts.items())
    if not word_counts:
        return list(reserved_tokens), 0
    upper, lower = learner.get_search_threshs(
        word_counts, params.upper_thresh, params.lower_thresh
    )
    lower = max(lower, 1)
    words = learner.get_input_words(
        word_counts, params.reserved_tokens, params.max_token_length
    )
    allowed = learner.get_allowed_chars(words, params.max_unique_chars)
    words = learner.filter_input_words(words, allowed, params.max_input_tokens)
    smallest_fit = vocabulary_size * (1.0 - params.slack_ratio)
    evaluations = 0

    def learn(threshold):
        nonlocal evaluations
        evaluations += 1
        return learner.learn_with_thresh(words, threshold, params)

    vocabulary = learn(lower)
    if len(vocabulary) <= vocabulary_size:
        return vocabulary, evaluations
    # Find an upper threshold that fits; subword counts can exceed the
    # largest word count, so grow it geometrically if needed.
    size_lower = len(vocabulary)
    upper = max(upper, lower + 1)
    fitting = learn(upper)
    total = sum(count for _, count in words) + 1
    while len(fitting) > vocabulary_size and upper < total:
        lower, size_lower, upper = upper, len(fitting), upper * 4
        fitting = learn(upper)
    # Invariant: `lower` gives too many tokens, `upper` fits (or is the
    # largest threshold there is: the characters alone are too many).
    # Regula falsi in log-log space: the vocabulary size falls roughly as a
    # power of the threshold (Zipf). Each step stays at least 10 % of the
    # interval away from either end, so the interval shrinks geometrically.
    goal = vocabulary_size * (1.0 - params.slack_ratio / 2)
    while upper - lower > 1 and len(fitting) < smallest_fit:
        x_lower, x_upper = np.log(lower), np.log(upper)
        fraction = np.log(size_lower / goal) / max(
            np.log(size_lower / len(fitting)), 1e-6
        )
        fraction = min(max(fraction, 0.1), 0.9)
        threshold = np.exp(x_lower + fraction * (x_upper - x_lower))
        threshold = int(round(threshold))
        threshold = min(max(threshold, lower + 1), upper - 1)
        vocabulary = learn(threshold)
        if len(vocabulary) > vocabulary_size:
            lower, size_lower = threshold, len(vocabulary)
        else:
            upper, fitting = threshold, vocabulary
    return fitting, evaluations


def _batches(texts, batch_size):
    batch = []
    for text in texts:
        batch.append(text)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch
