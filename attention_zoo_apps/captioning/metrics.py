"""Caption metrics: corpus BLEU-1..4 and CIDEr-D as coco-caption reports them.

Both metrics compare each generated caption (hypothesis) with the set of
human captions (references) of its image, after the same tokenization:

```python
scores = caption_metrics(
    ["a dog runs on the grass", "two men ride horses"],
    [
        ["A dog running across the grass.", "a brown dog on a lawn"],
        ["Two men are riding horses.", "men on horseback"],
    ],
)
# {"bleu_1": ..., "bleu_2": ..., "bleu_3": ..., "bleu_4": ..., "cider": ...}
```

BLEU (Papineni et al. 2002, "BLEU: a method for automatic evaluation of
machine translation") follows `pycocoevalcap/bleu/bleu_scorer.py` of
coco-caption (github.com/tylin/coco-caption) with its "closest" reference
length; CIDEr-D (Vedantam et al. 2015, "CIDEr: Consensus-based image
description evaluation") follows `pycocoevalcap/cider/cider_scorer.py`, the
metric the COCO leaderboard calls CIDEr. Deviations from coco-caption:

- Tokenization is a regular-expression approximation of Stanford
  PTBTokenizer followed by coco-caption's punctuation removal (no Java); see
  `tokenize_caption` for the exact rule and the cases where it differs.
- BLEU is reported in `[0, 100]` (coco-caption: `[0, 1]`) and without
  coco-caption's guard constants (`1e-15` added to the matches, `1e-9` to
  the totals): a zero precision gives exactly 0 here (about `1e-5` there),
  as sacrebleu with `smooth_method="none"` does; otherwise the scores agree
  to a relative `1e-9`.
- CIDEr-D's length penalty uses word counts; coco-caption counts bigrams
  (`len - 1`), which gives the same difference whenever the score can be
  non-zero. An order with no n-grams in the hypothesis or reference scores
  0 (the original divides 0 by 0).
"""

import collections
import math
import re

import numpy as np

# caption_metrics' BLEU-N.
BLEU_ORDER = 4
CIDER_MAX_ORDER = 4
# CIDEr-D's length penalty width in words (coco-caption's).
CIDER_SIGMA = 6.0

# Curly quotes to ASCII (’ is the usual apostrophe in scraped captions).
_QUOTES = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
)

# PTB splits clitics off their word: "isn't" -> "is n't", "dog's" -> "dog 's".
_CLITIC = re.compile(r"(?<=\w)(n't|'(?:s|re|ve|ll|d|m))\b")

# Characters that end up as punctuation tokens coco-caption drops. `.` and
# `-` are kept inside a word (3.5, u.s, double-decker), `,` and `:` between
# digits (1,000, 10:30), `'` inside a word (o'clock) and in front of a clitic.
_PUNCTUATION = re.compile(
    r"""[!?;"()\[\]{}`\u2026]"""
    r"|(?<!\d)[,:]|[,:](?!\d)"
    r"|(?<!\w)[.-]|[.-](?!\w)"
    r"|(?<!\w)'(?!(?:s|re|ve|ll|d|m)\b)|'(?!\w)"
)


def tokenize_caption(text):
    """Lower-cased words of a caption without punctuation, as coco-caption.

    coco-caption runs Stanford PTBTokenizer (`-lowerCase`) and drops the
    tokens `'' ' `` ` -LRB- -RRB- -LCB- -RCB- . ? ! , : - -- ... ;`. This
    function reproduces the result for ordinary captions:

    1. lower-case; curly quotes become ASCII quotes;
    2. split the clitics `n't 's 're 've 'll 'd 'm` off the end of a word
       ("isn't" -> "is n't", "man's" -> "man 's"), keeping them as tokens;
    3. replace with a space every `!`, `?`, `;`, double quote, backquote,
       bracket, brace, parenthesis and ellipsis character; every `,` and
       `:` not between two digits; every `.` and `-` not between two word
       characters; every `'` neither inside a word nor starting a clitic;
    4. split on whitespace.

    Other symbols (`& / $ % #`) stay in their words. Known differences from
    PTB: abbreviations lose their final period ("mr." -> "mr", PTB keeps
    "mr."), `$5` and `50%` stay one token (PTB splits them), and brackets
    are dropped (PTB writes `-LSB-` and `-RSB-`, absent from coco's list).

    Args:
        text: str, a caption.

    Returns:
        A list of str; empty for a caption of punctuation only. The function
        is idempotent: tokens joined by spaces tokenize to themselves.
    """
    if not isinstance(text, str):
        raise TypeError(
            f"A caption must be a str. Received: {type(text).__name__} {text!r}"
        )
    text = text.lower().translate(_QUOTES)
    text = _CLITIC.sub(r" \1", text)
    return _PUNCTUATION.sub(" ", text).split()


def corpus_bleu(hypotheses, references, max_order=4):
    """Corpus BLEU-1..`max_order` with coco-caption's definition.

    For each order `k`, the modified precision `p_k` is the number of
    hypothesis k-grams matched in the references (each k-gram's count
    clipped at its largest count in any one reference of that image),
    summed over the corpus, over the number of hypothesis k-grams, summed
    over the corpus. `BLEU-n = 100 * BP * exp(mean_{k<=n} log p_k)` with the
    brevity penalty `BP = min(1, exp(1 - r / c))`, where `c` is the total
    hypothesis length and `r` the sum over hypotheses of the reference
    length closest to the hypothesis length (ties: the shorter). No
    smoothing: a zero `p_k` makes BLEU-n zero for every `n >= k`.

    Args:
        hypotheses: list of str, one generated caption per image.
        references: list (per hypothesis) of non-empty lists of str.
        max_order: int, the highest n-gram order. Defaults to `4`.

    Returns:
        A dict `{"bleu_1": float, ..., "bleu_<max_order>": float}`, each in
        `[0, 100]`.
    """
    if not isinstance(max_order, int) or max_order < 1:
        raise ValueError(
            "`max_order` must be a positive integer. "
            f"Received: max_order={max_order!r}"
        )
    hypotheses, references = tokenize_corpus(hypotheses, references)
    return _bleu(hypotheses, references, max_order)


def cider_scores(hypotheses, references, sigma=CIDER_SIGMA):
    """CIDEr-D of each image, as coco-caption's `Cider` computes it.

    Each caption becomes, for `n = 1..4`, a vector `g^n` over n-grams with
    entries `tf * (log N - log max(1, df))`: `tf` the raw count of the
    n-gram in the caption, `N` the number of images in the corpus and `df`
    the number of images whose reference set contains the n-gram (document
    frequency over the references of the evaluated corpus only). Between a
    hypothesis `h` and a reference `r`:

        sim_n(h, r) = exp(-(len_h - len_r)^2 / (2 sigma^2))
                      * sum_g min(g^n_h, g^n_r) g^n_r / (|g^n_h| |g^n_r|)

    (the minimum clips the hypothesis counts at the reference counts; the
    Gaussian penalises length differences), and
    `CIDEr-D(h) = 10 * mean_n mean_r sim_n(h, r)`. Scores lie in `[0, 10]`;
    papers usually print 100 times the corpus mean. n-grams present in
    every image get zero weight, so a corpus of a single image scores 0.

    Args:
        hypotheses: list of str, one generated caption per image.
        references: list (per hypothesis) of non-empty lists of str.
        sigma: float, the width of the length penalty in words. Defaults to
            `6.0`.

    Returns:
        A float64 array `(len(hypotheses),)`.
    """
    if not sigma > 0:
        raise ValueError(
            f"`sigma` must be a positive number. Received: sigma={sigma!r}"
        )
    hypotheses, references = tokenize_corpus(hypotheses, references)
    return _cider(hypotheses, references, sigma)


def corpus_cider(hypotheses, references, sigma=CIDER_SIGMA):
    """Corpus CIDEr-D: the mean of `cider_scores` over the images.

    Args:
        hypotheses: list of str, one generated caption per image.
        references: list (per hypothesis) of non-empty lists of str.
        sigma: float, the width of the length penalty in words. Defaults to
            `6.0`.

    Returns:
        A float in `[0, 10]` (coco-caption's scale).
    """
    return float(np.mean(cider_scores(hypotheses, references, sigma)))


def caption_metrics(hypotheses, references):
    """BLEU-1..4 (in `[0, 100]`) and CIDEr-D (coco scale) of a corpus.

    Args:
        hypotheses: list of str, one generated caption per image.
        references: list (per hypothesis) of non-empty lists of str.

    Returns:
        A dict with keys `bleu_1`, `bleu_2`, `bleu_3`, `bleu_4` and `cider`,
        as `corpus_bleu` and `corpus_cider` return them.
    """
    hypotheses, references = tokenize_corpus(hypotheses, references)
    metrics = _bleu(hypotheses, references, BLEU_ORDER)
    metrics["cider"] = float(
        np.mean(_cider(hypotheses, references, CIDER_SIGMA))
    )
    return metrics


def exact_match(hypotheses, references):
    """Share of hypotheses equal to one of their references.

    Compared as the metrics tokenize them (`tokenize_caption`: lower case,
    punctuation dropped).

    Args:
        hypotheses: list of str, one generated caption per image.
        references: list (per hypothesis) of lists of str.

    Returns:
        A float in `[0, 1]`; `0.0` for no hypotheses.

    Example:

    >>> exact_match(["A dog."], [["a dog", "a cat"]])
    1.0
    """
    hits = sum(
        tokenize_caption(h) in [tokenize_caption(r) for r in refs]
        for h, refs in zip(hypotheses, references)
    )
    return hits / max(len(hypotheses), 1)


def tokenize_corpus(hypotheses, references):
    """Validates a corpus; returns token lists `[T]` and `[[T] per ref]`
    (`tokenize_caption`).

    Raises:
        TypeError: a str where a list belongs.
        ValueError: an empty corpus, lengths that differ, or an image
            without references.
    """
    for name, value in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(value, str):
            raise TypeError(f"`{name}` must be a list, not a str.")
    if len(hypotheses) != len(references):
        raise ValueError(
            "`hypotheses` and `references` must have the same length. "
            f"Received: {len(hypotheses)} hypotheses and "
            f"{len(references)} reference lists"
        )
    if not hypotheses:
        raise ValueError("The corpus is empty: no hypotheses to score.")
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            raise TypeError(
                f"references[{i}] must be a list of str, not a str."
            )
        if len(refs) == 0:
            raise ValueError(
                f"references[{i}] is empty: every image needs at least one "
                "reference caption."
            )
    return (
        [tokenize_caption(hyp) for hyp in hypotheses],
        [[tokenize_caption(ref) for ref in refs] for refs in references],
    )


def ngram_counts(tokens, max_order):
    """A `Counter` of the 1..`max_order`-grams (tuples) of a token list."""
    counts = collections.Counter()
    for n in range(1, max_order + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i : i + n])] += 1
    return counts


def bleu_statistics(hypothesis, references, max_order):
    """One image's share of corpus BLEU: the sums `corpus_bleu` adds up
    over the images.

    Args:
        hypothesis: list of str, the caption's tokens.
        references: non-empty list of token lists.
        max_order: int, the highest n-gram order.

    Returns:
        A list of ints: the clipped matches of each order `1..max_order`,
        then the hypothesis' n-gram count of each order, then its length
        and the length of the reference closest to it (ties: the shorter).
    """
    max_ref_counts = collections.Counter()
    for ref in references:
        max_ref_counts |= ngram_counts(ref, max_order)  # max per n-gram
    matches = [0] * max_order
    for ngram, count in ngram_counts(hypothesis, max_order).items():
        matches[len(ngram) - 1] += min(count, max_ref_counts[ngram])
    totals = [max(len(hypothesis) - k, 0) for k in range(max_order)]
    closest = min(
        (abs(len(ref) - len(hypothesis)), len(ref)) for ref in references
    )
    return [*matches, *totals, len(hypothesis), closest[1]]


def bleu_from_statistics(matches, totals, hyp_length, ref_length):
    """BLEU-1..K of a corpus from its summed `bleu_statistics`.

    Args:
        matches: K ints, the clipped matches of each order.
        totals: K ints, the hypotheses' n-grams of each order.
        hyp_length: int, the hypotheses' total length.
        ref_length: int, the closest references' total length.

    Returns:
        A dict `{"bleu_1": float, ..., "bleu_K": float}` in `[0, 100]`.
    """
    if hyp_length == 0:
        brevity_penalty = 0.0
    else:
        brevity_penalty = min(1.0, math.exp(1.0 - ref_length / hyp_length))
    scores = {}
    log_precision_sum = 0.0
    for k in range(len(matches)):
        if matches[k] == 0:
            log_precision_sum = -math.inf  # so every higher order is 0 too
        else:
            log_precision_sum += math.log(matches[k] / totals[k])
        mean_log = log_precision_sum / (k + 1)
        scores[f"bleu_{k + 1}"] = 100.0 * brevity_penalty * math.exp(mean_log)
    return scores


def _bleu(hypotheses, references, max_order):
    """BLEU from token lists; see `corpus_bleu`."""
    sums = [
        sum(column)
        for column in zip(
            *(
                bleu_statistics(hyp, refs, max_order)
                for hyp, refs in zip(hypotheses, references)
            )
        )
    ]
    return bleu_from_statistics(
        sums[:max_order], sums[max_order:-2], sums[-2], sums[-1]
    )


def _cider(hypotheses, references, sigma):
    """CIDEr-D per image `(len(hypotheses),)` from token lists."""
    hyp_counts = [ngram_counts(hyp, CIDER_MAX_ORDER) for hyp in hypotheses]
    ref_counts = [
        [ngram_counts(ref, CIDER_MAX_ORDER) for ref in refs]
        for refs in references
    ]
    # Each image's reference set counts once per n-gram.
    document_frequency = collections.Counter()
    for counts in ref_counts:
        document_frequency.update(set().union(*counts))
    log_num_images = math.log(len(hypotheses))

    def tfidf(counts):
        # One {n-gram: weight} dict and one L2 norm per order.
        vectors = [{} for _ in range(CIDER_MAX_ORDER)]
        for ngram, tf in counts.items():
            idf = log_num_images - math.log(max(1, document_frequency[ngram]))
            vectors[len(ngram) - 1][ngram] = tf * idf
        norms = [math.sqrt(sum(w * w for w in v.values())) for v in vectors]
        return vectors, norms

    scores = np.zeros(len(hypotheses))
    for i, (hyp, refs) in enumerate(zip(hypotheses, references)):
        hyp_vectors, hyp_norms = tfidf(hyp_counts[i])
        total = 0.0
        for ref, counts in zip(refs, ref_counts[i]):
            ref_vectors, ref_norms = tfidf(counts)
            delta = len(hyp) - len(ref)
            penalty = math.exp(-(delta**2) / (2.0 * sigma**2))
            for n in range(CIDER_MAX_ORDER):
                if hyp_norms[n] == 0.0 or ref_norms[n] == 0.0:
                    continue
                ref_vector = ref_vectors[n]
                dot = sum(
                    min(weight, ref_vector.get(ngram, 0.0))
                    * ref_vector.get(ngram, 0.0)
                    for ngram, weight in hyp_vectors[n].items()
                )
                total += penalty * dot / (hyp_norms[n] * ref_norms[n])
        scores[i] = 10.0 * total / (CIDER_MAX_ORDER * len(refs))
    return scores
