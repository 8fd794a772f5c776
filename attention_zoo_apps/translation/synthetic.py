"""A synthetic language pair whose word alignment is known.

`make_synthetic_pairs` generates an English-like source language and a
target language with a word-for-word lexicon and a fixed reordering, so
every target word aligns to exactly one known source word: a task a small
model learns in minutes on a CPU, with a ground truth for its attention
(`alignment_matrix`). `fit_arguments(count, seed)` gives the pairs as the
positional arguments of `Translator.fit`.
"""

import dataclasses

import numpy as np

# The synthetic language pair. Source: English words. Target: Spanish-like
# words, one per source word (no agreement, no articles), so the lexicon is
# a bijection.
NOUNS = {
    "cat": "gato",
    "dog": "perro",
    "bird": "pajaro",
    "horse": "caballo",
    "fish": "pez",
    "cow": "vaca",
    "mouse": "raton",
    "bear": "oso",
    "wolf": "lobo",
    "fox": "zorro",
    "child": "nino",
    "woman": "mujer",
    "man": "hombre",
    "teacher": "maestro",
    "doctor": "medico",
    "farmer": "granjero",
    "king": "rey",
    "queen": "reina",
    "friend": "amigo",
    "baker": "panadero",
    "apple": "manzana",
    "book": "libro",
    "house": "casa",
    "tree": "arbol",
    "car": "coche",
    "river": "rio",
    "boat": "barco",
    "bread": "pan",
    "ball": "pelota",
    "flower": "flor",
}
ADJECTIVES = {
    "big": "grande",
    "small": "pequeno",
    "red": "rojo",
    "green": "verde",
    "blue": "azul",
    "old": "viejo",
    "young": "joven",
    "happy": "feliz",
    "sad": "triste",
    "tall": "alto",
    "short": "bajo",
    "fast": "rapido",
    "slow": "lento",
    "black": "negro",
    "white": "blanco",
    "new": "nuevo",
    "good": "bueno",
    "bad": "malo",
    "strong": "fuerte",
    "quiet": "tranquilo",
}
VERBS = {
    "sees": "ve",
    "eats": "come",
    "finds": "encuentra",
    "takes": "toma",
    "wants": "quiere",
    "helps": "ayuda",
    "follows": "sigue",
    "carries": "lleva",
    "watches": "mira",
    "hears": "oye",
    "loves": "ama",
    "draws": "dibuja",
    "buys": "compra",
    "sells": "vende",
    "pushes": "empuja",
    "pulls": "jala",
    "calls": "llama",
    "hides": "esconde",
    "catches": "atrapa",
    "holds": "sostiene",
}
LEXICON = {**NOUNS, **ADJECTIVES, **VERBS}
NOUN_LIST, ADJECTIVE_LIST, VERB_LIST = (
    list(NOUNS),
    list(ADJECTIVES),
    list(VERBS),
)


@dataclasses.dataclass(frozen=True)
class SyntheticPairs:
    """Synthetic sentence pairs with their word alignment.

    Attributes:
        pairs: list of `(source, target)` str tuples, words separated by one
            space.
        alignments: list (one per pair) of lists of int: for target word
            `j`, the index `i` of the source word it translates.
    """

    pairs: list
    alignments: list


def make_synthetic_pairs(num_pairs, seed=0, adjective_probability=0.5):
    """Generates pairs of a toy SVO language and its SOV translation.

    Source sentences are `[adj] noun verb [adj] noun` (each adjective present
    with probability `adjective_probability`), e.g. `"big dog sees cat"`.
    The target translates word for word through `LEXICON` and reorders:
    adjectives follow their noun and the verb goes last (SVO -> SOV):
    `"perro grande gato ve"`. So every target word aligns to exactly one
    source word and the alignment crosses (the verb moves past the object).
    72 source words, 72 target words, 3 to 5 words per sentence.

    Args:
        num_pairs: int, how many pairs.
        seed: int, seeds the NumPy generator; the same seed gives the same
            pairs. Defaults to `0`.
        adjective_probability: float in [0, 1]. Defaults to `0.5`.

    Returns:
        A `SyntheticPairs`.

    Example:

    >>> data = make_synthetic_pairs(1000, seed=1)
    >>> data.pairs[0]
    ('house holds good ball', 'casa pelota bueno sostiene')
    >>> data.alignments[0]  # target word j translates source word [j]
    [0, 3, 2, 1]
    """
    if not isinstance(num_pairs, int) or num_pairs < 0:
        raise ValueError(
            "`num_pairs` must be a non-negative integer. "
            f"Received: num_pairs={num_pairs!r}"
        )
    if not 0.0 <= adjective_probability <= 1.0:
        raise ValueError(
            "`adjective_probability` must be in [0, 1]. "
            f"Received: adjective_probability={adjective_probability}"
        )
    rng = np.random.default_rng(seed)
    pairs, alignments = [], []
    for _ in range(num_pairs):
        source = []
        subject = _noun_phrase(rng, source, adjective_probability)
        source.append(VERB_LIST[rng.integers(len(VERB_LIST))])
        verb = len(source) - 1
        obj = _noun_phrase(rng, source, adjective_probability)
        alignment = subject + obj + [verb]  # SOV, adjectives after nouns
        target = [LEXICON[source[i]] for i in alignment]
        pairs.append((" ".join(source), " ".join(target)))
        alignments.append(alignment)
    return SyntheticPairs(pairs=pairs, alignments=alignments)


def _noun_phrase(rng, source, adjective_probability):
    """Appends `[adj] noun` to `source`; returns their indices in target
    order (noun first)."""
    adjective = rng.random() < adjective_probability
    if adjective:
        source.append(ADJECTIVE_LIST[rng.integers(len(ADJECTIVE_LIST))])
    source.append(NOUN_LIST[rng.integers(len(NOUN_LIST))])
    noun = len(source) - 1
    return [noun, noun - 1] if adjective else [noun]


def alignment_matrix(
    alignment, source_length=None, target_length=None, source_offset=0
):
    """One alignment as a 0/1 matrix `(target_length, source_length)`.

    Row `j` (decoding step `j`, position `j` of `target_out`) has a 1 at the
    source token position of its aligned word: `alignment[j] +
    source_offset`. With the default conventions of
    `attention_zoo_apps.translation.data.make_translation_dataset` (no START on
    the source) and a tokenizer that keeps each synthetic word whole (see
    `make_synthetic_pairs`), word positions are token positions and
    `source_offset=0`. Rows beyond the alignment (the END step, padding)
    are zero.

    Args:
        alignment: list of int, as in `SyntheticPairs.alignments`.
        source_length: int or None; defaults to the last aligned position
            plus one.
        target_length: int or None; defaults to `len(alignment)`.
        source_offset: int, added to every source index. Defaults to `0`.

    Returns:
        A float32 NumPy array.
    """
    alignment = [int(i) + source_offset for i in alignment]
    if source_length is None:
        source_length = max(alignment, default=-1) + 1
    if target_length is None:
        target_length = len(alignment)
    matrix = np.zeros((target_length, source_length), "float32")
    for j, i in enumerate(alignment[:target_length]):
        if i < source_length:
            matrix[j, i] = 1.0
    return matrix


def fit_arguments(count, seed=0):
    """`count` generated pairs as the positional arguments of
    `Translator.fit`: a tuple `(pairs,)` of `(source, target)` str
    tuples."""
    return (make_synthetic_pairs(count, seed=seed).pairs,)
