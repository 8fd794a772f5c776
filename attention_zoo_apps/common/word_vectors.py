"""Pretrained word vectors (GloVe, word2vec text) for an embedding matrix.

`load_word_vectors` streams a vector file and keeps only the rows of the
words in a vocabulary, so multi-gigabyte files (GloVe 840B: 2.2 million
lines) load in one pass with memory for the vocabulary only. The matrix it
returns initialises a Keras embedding:

```python
matrix, found = load_word_vectors("glove.840B.300d.txt", vocabulary)
print(coverage_report(found, vocabulary))
embedding = keras.layers.Embedding(
    len(vocabulary),
    matrix.shape[1],
    embeddings_initializer=keras.initializers.Constant(matrix),
    mask_zero=True,
)
```
"""

import numpy as np

from attention_zoo_apps.common import packaged_vectors
from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.common.loaders import line_error


def load_word_vectors(
    path,
    vocabulary,
    embedding_dim=None,
    lowercase=False,
    seed=0,
    scale=None,
    reserved=("[PAD]",),
    max_lines=None,
    encoding="utf-8",
):
    """An embedding matrix for `vocabulary` from a word vector text file.

    Reads GloVe text files (`word v1 ... vD` a line) and word2vec text files
    (the same after a first line `count dim`, detected); `.gz` files are
    decompressed. `path` may also name vectors installed as a package
    (`"glove-6b-50d"`: `attention_zoo_apps.common.packaged_vectors`), matched
    the same way. The dimension `D` comes from the header or the first
    line. A line with more than `D + 1` fields holds a word with spaces
    (GloVe 840B has a few): the word is everything before the last `D`
    fields. The numbers of a line are parsed only when its word is kept
    (and on the first line), so a file is read at the speed of splitting
    lines.

    Row `i` of the matrix is the vector of `vocabulary[i]`: the first line
    of the file with that word (with `lowercase`, the first whose word
    lower-cased equals the token lower-cased; files sorted by frequency
    then give the commonest casing). Tokens not in the file get random
    normal vectors with the standard deviation of the vectors found (or
    `scale`), drawn from `seed`, row by row, so a token's vector does not
    depend on which others were found. Tokens in `reserved` get zeros (the
    padding row of a masked embedding must be zero) and count as not found.

    Args:
        path: str or path-like, or the name of packaged vectors.
        vocabulary: sequence of str, the tokens by id (e.g.
            `SubwordTokenizer.vocabulary`).
        embedding_dim: int or None, the dimension the file must have.
            Defaults to `None` (any).
        lowercase: bool, match words case-insensitively. Defaults to
            `False`.
        seed: int, seeds the random rows. Defaults to `0`.
        scale: float or None, the standard deviation of the random rows.
            Defaults to `None` (that of the vectors found).
        reserved: sequence of str, tokens whose rows are zero. Defaults to
            `("[PAD]",)`.
        max_lines: int or None, read at most this many vectors. Defaults to
            `None` (all).
        encoding: str. Defaults to `"utf-8"`.

    Returns:
        A tuple `(matrix, found)`: a float32 array `(len(vocabulary), D)`
        and a bool array `(len(vocabulary),)`, True for rows read from the
        file.

    Raises:
        ValueError: `path:line: ...` for a line with too few or too many
            values, a value that is not a number, a header whose count
            disagrees with the file, an undecodable line, or a dimension
            other than `embedding_dim`; when the file has no vectors, or
            none of the vocabulary and no `scale` is given.

    Example:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "vectors.txt"
    >>> _ = path.write_text("the 0.5 -0.5\\ncat 1.0 2.0\\n")
    >>> matrix, found = load_word_vectors(path, ["[PAD]", "cat", "dog"])
    >>> matrix[:2].tolist(), found.tolist()
    ([[0.0, 0.0], [1.0, 2.0]], [False, True, False])
    """
    _check_arguments(embedding_dim, scale, max_lines)
    vocabulary = list(vocabulary)
    reserved = set(reserved or ())
    rows = {}  # file word (lower-cased with `lowercase`) -> row indices
    for index, token in enumerate(vocabulary):
        if not isinstance(token, str):
            raise ValueError(
                "`vocabulary` must hold strings. "
                f"Received: vocabulary[{index}]={token!r}"
            )
        if token not in reserved:
            key = token.lower() if lowercase else token
            rows.setdefault(key, []).append(index)
    if packaged_vectors.is_packaged(path):
        dim, vectors = _packaged(
            path, rows, embedding_dim, lowercase, max_lines
        )
    else:
        dim, vectors = _read_vectors(
            path, rows, embedding_dim, lowercase, max_lines, encoding
        )
    if not vectors and (rows and scale is None):
        raise ValueError(
            f"None of the {len(vocabulary)} vocabulary tokens is in {path}"
            f"{'' if lowercase else ' (try lowercase=True)'}, so there is no "
            "scale for the random vectors; pass `scale` to accept that."
        )
    if scale is None:
        scale = float(np.std(list(vectors.values()))) if vectors else 1.0
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((len(vocabulary), dim)) * scale
    matrix = matrix.astype("float32")
    found = np.zeros(len(vocabulary), bool)
    for key, vector in vectors.items():
        matrix[rows[key]] = vector
        found[rows[key]] = True
    for index, token in enumerate(vocabulary):
        if token in reserved:
            matrix[index] = 0.0
    return matrix, found


def _check_arguments(embedding_dim, scale, max_lines):
    for name, value in (
        ("embedding_dim", embedding_dim),
        ("max_lines", max_lines),
    ):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(
                f"`{name}` must be None or a positive integer. "
                f"Received: {name}={value!r}"
            )
    if scale is not None and not scale > 0:
        raise ValueError(
            f"`scale` must be None or positive. Received: scale={scale!r}"
        )


def _read_vectors(path, rows, embedding_dim, lowercase, max_lines, encoding):
    """One pass over the file: `(D, {key: float32 vector (D,)})` for the
    keys of `rows` found, each from its first line."""
    lines = iter_lines(path, encoding)
    first = next(lines, None)
    if first is None:
        raise ValueError(f"{path}: no vectors: the file is empty")
    header_line, text = first
    fields = text.split()
    count = None
    if len(fields) == 2 and all(field.isdigit() for field in fields):
        count, dim = int(fields[0]), int(fields[1])  # word2vec header
    else:
        dim = len(text.rstrip().split(" ")) - 1
        lines = _chain(first, lines)
    if dim < 1:
        raise line_error(
            path, header_line, f"expected a word and values: {text[:60]!r}"
        )
    if embedding_dim is not None and dim != embedding_dim:
        raise line_error(
            path,
            header_line,
            f"the file's vectors have {dim} values, expected "
            f"embedding_dim={embedding_dim}",
        )
    vectors = {}
    num_lines = 0
    for line_number, text in lines:
        if max_lines is not None and num_lines >= max_lines:
            break
        num_lines += 1
        word = _word(path, line_number, text.rstrip(), dim)
        key = word.lower() if lowercase else word
        if key in rows and key not in vectors:
            vectors[key] = _values(path, line_number, text, word, dim)
        elif num_lines == 1:
            _values(path, line_number, text, word, dim)  # check the numbers
    if num_lines == 0:
        raise ValueError(f"{path}: no vectors after the header")
    if count is not None and max_lines is None and num_lines != count:
        raise line_error(
            path,
            header_line,
            f"the header says {count} vectors, the file has {num_lines}",
        )
    return dim, vectors


def _packaged(name, rows, embedding_dim, lowercase, max_lines):
    """`_read_vectors` for the packaged vectors `name`."""
    words, matrix = packaged_vectors.read_packaged_vectors(name)
    dim = matrix.shape[1]
    if embedding_dim is not None and dim != embedding_dim:
        raise ValueError(
            f"{name} has {dim}-dimensional vectors, expected "
            f"embedding_dim={embedding_dim} (give an embedding dimension of "
            f"{dim} with these vectors)"
        )
    vectors = {}
    for index, word in enumerate(words[:max_lines]):
        key = word.lower() if lowercase else word
        if key in rows and key not in vectors:
            vectors[key] = np.array(matrix[index], "float32")
    return dim, vectors


def _chain(first, lines):
    yield first
    yield from lines


def _word(path, line_number, text, dim):
    """The word of a vector line (with its spaces, if it has some)."""
    num_values = text.count(" ")
    if num_values == dim:
        return text[: text.index(" ")]
    if num_values > dim:
        word = text.rsplit(" ", dim)[0]
        last = word.rsplit(" ", 1)[1]
        if not _is_number(last):  # GloVe 840B: a word with spaces
            return word
    raise line_error(
        path,
        line_number,
        f"expected a word and {dim} values, found {num_values}: {text[:60]!r}",
    )


def _values(path, line_number, text, word, dim):
    """The `dim` numbers after `word` as a float32 array."""
    fields = text[len(word) + 1 :].split()
    try:
        vector = np.asarray(fields, dtype="float32")
    except ValueError as error:
        raise line_error(
            path, line_number, f"word {word!r}: not a number: {error}"
        ) from None
    if vector.shape != (dim,):
        raise line_error(
            path,
            line_number,
            f"word {word!r}: expected {dim} values, found {vector.size}",
        )
    return vector


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def coverage_report(found, vocabulary, reserved=("[PAD]",), examples=5):
    """A line saying how many tokens have pretrained vectors.

    Args:
        found: bool array, as returned by `load_word_vectors`.
        vocabulary: sequence of str, the same vocabulary.
        reserved: sequence of str, tokens left out of the count. Defaults
            to `("[PAD]",)`.
        examples: int, how many missing tokens to name. Defaults to `5`.

    Returns:
        A str like `"7,812 of 8,000 tokens (97.7%) found; missing: 'qué',
        'naïve'"`.

    Example:

    >>> coverage_report([False, True, True, False], ["[PAD]", "a", "b", "c"])
    "2 of 3 tokens (66.7%) found; missing: 'c'"
    """
    vocabulary = list(vocabulary)
    found = np.asarray(found, bool)
    if found.shape != (len(vocabulary),):
        raise ValueError(
            "`found` must have one entry per vocabulary token. Received: "
            f"found.shape={found.shape}, len(vocabulary)={len(vocabulary)}"
        )
    reserved = set(reserved or ())
    counted = [i for i, token in enumerate(vocabulary) if token not in reserved]
    hits = int(found[counted].sum()) if counted else 0
    share = 100.0 * hits / len(counted) if counted else 0.0
    report = f"{hits:,} of {len(counted):,} tokens ({share:.1f}%) found"
    missing = [repr(vocabulary[i]) for i in counted if not found[i]]
    if missing and examples:
        report += "; missing: " + ", ".join(missing[:examples])
        if len(missing) > examples:
            report += ", ..."
    return report
