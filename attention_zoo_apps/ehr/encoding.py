"""What the model reads of a record: code ids, scaled values, times.

`CodeVocabulary` maps event codes to ids and `ValueScaler` standardises
event values per code, both fitted on training records; `encode_events`
turns `PatientRecords` into the model's event inputs with them (NumPy).
`attention_zoo_apps.ehr.export` does the same in the serving graph.
"""

import collections
import json
import math

import numpy as np

from attention_zoo_apps.common.loaders import iter_lines
from attention_zoo_apps.common.loaders import line_error
from attention_zoo_apps.ehr.records import PatientRecords

# Ids of the code vocabulary (not WordPiece token ids: the notes' special
# ids are in `attention_zoo_apps.common.wordpiece`).
EVENT_PAD_ID = 0  # padding of event sequences
OOV_ID = 1  # codes not in the vocabulary
PAD = "<pad>"
OOV = "<oov>"
LENGTH_MULTIPLE = 16  # events and note tokens are padded to a multiple


class CodeVocabulary:
    """Maps event codes to ids: `EVENT_PAD_ID = 0`, `OOV_ID = 1`, then codes.

    Codes seen at least `min_count` times in the training records get ids
    from 2, most frequent first (ties alphabetical); any other code encodes
    to `OOV_ID`.

    Args:
        codes: iterable of str, the vocabulary after the two reserved
            entries, in id order.

    Example:

    >>> vocabulary = CodeVocabulary(["lab:lactate", "rx:heparin"])
    >>> vocabulary.encode(["rx:heparin", "never:seen"]).tolist()
    [3, 1]
    """

    def __init__(self, codes):
        self.codes = [PAD, OOV, *codes]
        self._ids = {code: i for i, code in enumerate(self.codes)}
        if len(self._ids) != len(self.codes):
            raise ValueError("`codes` must not repeat or hold the reserved.")

    @classmethod
    def build(cls, records, min_count=1, max_size=None):
        """The vocabulary of `records` (training records only).

        Args:
            records: a `PatientRecords`, or an iterable of code lists.
            min_count: int, fewer occurrences map to OOV. Defaults to `1`.
            max_size: int or None, the most ids in all (with PAD and OOV).
                Defaults to `None` (no limit).
        """
        lists = (
            records.codes if isinstance(records, PatientRecords) else records
        )
        counter = collections.Counter()
        for codes in lists:
            counter.update(codes)
        kept = sorted(
            (c for c, n in counter.items() if n >= min_count),
            key=lambda c: (-counter[c], c),
        )
        if max_size is not None:
            kept = kept[: max(0, max_size - 2)]
        return cls(kept)

    def __len__(self):
        return len(self.codes)

    def __contains__(self, code):
        return code in self._ids and self._ids[code] > OOV_ID

    def encode(self, codes):
        """int32 array of ids; unknown codes give `OOV_ID`."""
        return np.array([self._ids.get(c, OOV_ID) for c in codes], "int32")

    def decode(self, ids):
        """list of str, the codes of `ids`."""
        return [self.codes[int(i)] for i in ids]

    def save(self, path):
        """Writes one code a line, in id order (the reserved ones first)."""
        for code in self.codes:
            if "\n" in code or "\r" in code:
                raise ValueError(f"A code holds a line break: {code!r}")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(code + "\n" for code in self.codes))

    @classmethod
    def load(cls, path):
        """Reads a file written by `save`."""
        codes = [text for _, text in iter_lines(path, skip_blank=False)]
        if codes[:2] != [PAD, OOV]:
            raise line_error(path, 1, f"expected {PAD!r} then {OOV!r}")
        return cls(codes[2:])


class ValueScaler:
    """Standardises event values per code, with mean and std from training.

    `transform` gives `(value - mean[code]) / std[code]`, clipped to
    `[-clip, clip]`, and 0 where the value is NaN or the code has no numeric
    values in training; with it an indicator, 1.0 where the event had a
    finite value.

    Args:
        stats: dict code -> `(mean, std)`.
        clip: float. Defaults to `5.0`.
    """

    def __init__(self, stats=None, clip=5.0):
        stats = stats or {}
        self.stats = {c: (float(m), float(s)) for c, (m, s) in stats.items()}
        self.clip = float(clip)

    @classmethod
    def fit(cls, records, clip=5.0):
        """Per-code mean and std (1 where it is 0) of the finite values."""
        sums = collections.defaultdict(lambda: np.zeros(3))  # n, sum, sum sq
        for codes, values in zip(records.codes, records.values):
            for code, value in zip(codes, values):
                if np.isfinite(value):
                    sums[code] += (1.0, value, value * value)
        stats = {}
        for code, (n, total, squares) in sums.items():
            mean = total / n
            std = math.sqrt(max(squares / n - mean * mean, 0.0))
            stats[code] = (mean, std if std > 1e-6 else 1.0)
        return cls(stats, clip=clip)

    def transform(self, codes, values):
        """Two float32 arrays: scaled values, and 1/0 finite-value flags."""
        values = np.asarray(values, "float64")
        present = np.isfinite(values)
        scaled = np.zeros(len(values), "float64")
        for j, code in enumerate(codes):
            if present[j] and code in self.stats:
                mean, std = self.stats[code]
                scaled[j] = (values[j] - mean) / std
        scaled = np.clip(scaled, -self.clip, self.clip)
        return scaled.astype("float32"), present.astype("float32")

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"clip": self.clip, "stats": self.stats}, f, indent=1)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        return cls(config["stats"], clip=config["clip"])


def padded_length(longest):
    """`longest` rounded up to a multiple of `LENGTH_MULTIPLE` (at least
    one multiple)."""
    return -(-max(longest, 1) // LENGTH_MULTIPLE) * LENGTH_MULTIPLE


def encode_events(records, code_vocabulary, scaler, max_events):
    """The event inputs of `records`, NumPy arrays padded to one length.

    Each record keeps its last `max_events` events.

    Args:
        records: a `PatientRecords`.
        code_vocabulary: a `CodeVocabulary`.
        scaler: a fitted `ValueScaler`.
        max_events: int, the most events kept of a record.

    Returns:
        A dict `codes` int32 `(N, T)`, `values`, `has_value`, `times`
        float32 `(N, T)` (hours before the prediction time) and
        `event_index` int64 `(N, T)`, the index of each column's event in
        `records.codes[i]` (-1 on padding). `T` is a multiple of
        `LENGTH_MULTIPLE`.
    """
    count = len(records)
    length = padded_length(
        max([min(len(c), max_events) for c in records.codes] + [1])
    )
    arrays = {
        "codes": np.full((count, length), EVENT_PAD_ID, "int32"),
        "values": np.zeros((count, length), "float32"),
        "has_value": np.zeros((count, length), "float32"),
        "times": np.zeros((count, length), "float32"),
        "event_index": np.full((count, length), -1, "int64"),
    }
    for i in range(count):
        start = max(len(records.codes[i]) - max_events, 0)
        codes = records.codes[i][start:]
        n = len(codes)
        values, present = scaler.transform(codes, records.values[i][start:])
        arrays["codes"][i, :n] = code_vocabulary.encode(codes)
        arrays["values"][i, :n] = values
        arrays["has_value"][i, :n] = present
        arrays["times"][i, :n] = (
            records.prediction_times[i] - records.times[i][start:]
        )
        arrays["event_index"][i, :n] = np.arange(start, start + n)
    return arrays
