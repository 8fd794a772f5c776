"""Word vectors from unlabeled text when no pretrained file is at hand.

`train_ppmi_vectors` counts word co-occurrences in a window, weighs them by
positive pointwise mutual information (PPMI, with the context distribution
smoothed by `alpha = 0.75`) and keeps the top `dim` singular directions
(`U_d S_d^(1/2)`): the classic count-based embedding (Levy, Goldberg and
Dagan, 2015, "Improving Distributional Similarity with Lessons Learned from
Word Embeddings"), which on a few hundred thousand sentences comes close to
what skip-gram learns, in a minute on a CPU. Words are split exactly as
`SubwordTokenizer` splits them (`split_words`), so whole-word tokens of a
WordPiece vocabulary find their vectors. `save_word_vectors` writes the
GloVe text format that `load_word_vectors` reads.
"""

import collections
import os

import numpy as np
from scipy import sparse
from scipy.sparse import linalg

from attention_zoo_apps.common.wordpiece import split_words


def train_ppmi_vectors(
    texts,
    dim=300,
    window=5,
    min_count=3,
    max_words=50000,
    lowercase=True,
    batch_size=8192,
    seed=0,
):
    """PPMI + truncated SVD word vectors from an iterable of strings.

    Args:
        texts: iterable of str.
        dim: int, the vector size. Defaults to `300`.
        window: int, context words counted on each side (weighted
            `1 / distance`). Defaults to `5`.
        min_count: int, rarer words get no vector. Defaults to `3`.
        max_words: int, keep at most this many of the commonest words.
            Defaults to `50000`.
        lowercase: bool, as `SubwordTokenizer`'s option. Defaults to `True`.
        batch_size: int, strings split per TensorFlow call.
        seed: int, seeds the SVD's start vector.

    Returns:
        `(words, matrix)`: a list of str and float32 `(len(words), dim)`.
    """
    sentences = []
    counts = collections.Counter()
    texts = list(texts)
    for start in range(0, len(texts), batch_size):
        words = split_words(texts[start : start + batch_size], lowercase)
        for row in words.to_list():
            row = [w.decode("utf-8") for w in row]
            sentences.append(row)
            counts.update(row)
    vocabulary = [w for w, n in counts.most_common(max_words) if n >= min_count]
    if len(vocabulary) <= dim:
        raise ValueError(
            f"Only {len(vocabulary)} words occur {min_count}+ times: too few "
            f"for {dim}-dimensional vectors. Give more text or lower `dim`."
        )
    index = {w: i for i, w in enumerate(vocabulary)}
    rows, cols, values = [], [], []
    for sentence in sentences:
        ids = [index.get(w, -1) for w in sentence]
        for i, a in enumerate(ids):
            if a < 0:
                continue
            for d in range(1, window + 1):
                if i + d >= len(ids):
                    break
                b = ids[i + d]
                if b >= 0:
                    rows += [a, b]
                    cols += [b, a]
                    values += [1.0 / d, 1.0 / d]
    size = len(vocabulary)
    cooc = sparse.coo_matrix(
        (np.asarray(values, "float64"), (rows, cols)), shape=(size, size)
    ).tocsr()
    total = cooc.sum()
    word_sums = np.asarray(cooc.sum(axis=1)).ravel()
    context = np.asarray(cooc.sum(axis=0)).ravel() ** 0.75
    context = context / context.sum()
    cooc = cooc.tocoo()
    pmi = np.log(
        cooc.data
        * 1.0
        / total
        / (word_sums[cooc.row] / total)
        / context[cooc.col]
    )
    keep = pmi > 0
    ppmi = sparse.csr_matrix(
        (pmi[keep], (cooc.row[keep], cooc.col[keep])), shape=(size, size)
    )
    start = np.random.default_rng(seed).normal(size=size)
    u, s, _ = linalg.svds(ppmi, k=dim, v0=start)
    order = np.argsort(-s)
    matrix = (u[:, order] * np.sqrt(s[order])).astype("float32")
    return vocabulary, matrix


def save_word_vectors(path, words, matrix):
    """Writes `word v1 ... vD` lines (GloVe text format)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for word, vector in zip(words, matrix):
            f.write(word + " " + " ".join(f"{v:.5f}" for v in vector) + "\n")
    return path
