"""A fake decoder with a known answer, and NumPy references for decoding.

The fake model's next-token logits are a fixed table indexed by example,
step and previous token: `tables[b, t, prev]` `(V,)`. Its state holds a
step counter (the table's `t`) and a code of the path so far; its
attention `(N, V + 2)` is the one-hot of the previous token, then the path
code, then `count - index` (0 when the counter is carried correctly). So
the attention history shows whether state and histories followed the
chosen beams. Given `attention` tables `(B, L, V, Ts)` (weights over a
source, indexed like the logits) it returns those instead, for the
coverage penalty.
"""

import itertools

import numpy as np
from keras import ops

from attention_zoo.decoding import sample_search
from attention_zoo.decoding import tile_beams
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy

PAD, START, END = 0, 2, 3


class FakeModel:
    def __init__(self, tables, attention=None):
        self.tables = np.asarray(tables, "float32")  # (B, L, V, V)
        self.batch_size, self.max_length, self.vocabulary_size = (
            self.tables.shape[:3]
        )
        self.attention = attention  # (B, L, V, Ts) or None

    def initial_state(self):
        return {
            "count": np.zeros((self.batch_size,), "int32"),
            "code": np.zeros((self.batch_size,), "float32"),
        }

    def step_fn(self, beam_size=None):
        length, vocab = self.max_length, self.vocabulary_size
        tables = np.reshape(self.tables, (self.batch_size, length * vocab, -1))
        tables = ops.convert_to_tensor(tables)
        weights = self.attention
        if weights is not None:
            weights = np.reshape(weights, (self.batch_size, length * vocab, -1))
            weights = ops.convert_to_tensor(weights, "float32")
        if beam_size is not None:
            tables = tile_beams(tables, beam_size)  # (N, L * V, V)
            if weights is not None:
                weights = tile_beams(weights, beam_size)  # (N, L * V, Ts)

        def step_fn(token_ids, state, index):
            count = state["count"]
            row = ops.minimum(count, length - 1) * vocab + token_ids  # (N,)
            logits = ops.take_along_axis(tables, row[:, None, None], axis=1)
            code = state["code"] * vocab + ops.cast(token_ids, "float32")
            attention = ops.concatenate(
                [
                    ops.one_hot(token_ids, vocab),
                    code[:, None],
                    ops.cast(count - index, "float32")[:, None],
                ],
                axis=1,
            )  # (N, V + 2)
            if weights is not None:  # the given weights over a source
                attention = ops.take_along_axis(
                    weights, row[:, None, None], axis=1
                )[:, 0]  # (N, Ts)
            state = {"count": count + 1, "code": code}
            return logits[:, 0], state, attention

        return step_fn


def random_tables(batch_size, max_length, vocabulary_size, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    shape = (batch_size, max_length, vocabulary_size, vocabulary_size)
    return (rng.normal(size=shape) * scale).astype("float32")


def random_attention(
    batch_size, max_length, vocabulary_size, source_length, masked=1, seed=0
):
    """Attention tables `(B, L, V, Ts)`: random softmax weights over the
    first `Ts - masked` positions, exactly zero over the last `masked`
    (PAD)."""
    rng = np.random.default_rng(seed)
    shape = (batch_size, max_length, vocabulary_size, source_length)
    scores = rng.normal(size=shape) * 1.5
    scores[..., source_length - masked :] = -np.inf
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)).astype("float32")


def coverage_log(coverage):
    """`sum_i log(min(c_i, 1))` over the positions with `c_i > 0`."""
    coverage = np.asarray(coverage, "float64")
    covered = coverage[coverage > 0]
    return float(np.log(np.minimum(covered, 1.0)).sum())


def log_softmax(x):
    x = np.asarray(x, "float64")
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def normalize(score, length, alpha):
    return score / ((5.0 + length) / 6.0) ** alpha


def sequence_info(logp, sequence, max_length, weights=None):
    """`logp` `(L, V, V)`; `sequence` ends at END or has `max_length` ids;
    `weights` the example's attention tables `(L, V, Ts)` or `None`.

    Returns padded tokens, score, length and expected attention.
    """
    vocab = logp.shape[-1]
    tokens = np.zeros((max_length,), "int32")
    width = vocab + 2 if weights is None else weights.shape[-1]
    attention = np.zeros((max_length, width), "float32")
    prev, code, score = START, 0.0, 0.0
    for t, token in enumerate(sequence):
        code = code * vocab + prev
        if weights is None:
            attention[t, prev] = 1.0
            attention[t, vocab] = code
        else:
            attention[t] = weights[t, prev]
        score += logp[t, prev, token]
        tokens[t] = token
        prev = token
    return tokens, score, len(sequence), attention


def truncate(sequence):
    sequence = list(sequence)
    if END in sequence:
        sequence = sequence[: sequence.index(END) + 1]
    return tuple(sequence)


def greedy(tables):
    """Per example: (tokens, score, length, attention)."""
    results = []
    for logp in log_softmax(tables):
        max_length = logp.shape[0]
        sequence, prev = [], START
        for t in range(max_length):
            prev = int(np.argmax(logp[t, prev]))
            sequence.append(prev)
            if prev == END:
                break
        results.append(sequence_info(logp, sequence, max_length))
    return results


def brute_force_best(tables, alpha):
    """Per example: the sequence with the best normalized score."""
    results = []
    for logp in log_softmax(tables):
        max_length, vocab = logp.shape[0], logp.shape[-1]
        sequences = {
            truncate(s)
            for s in itertools.product(range(vocab), repeat=max_length)
        }
        infos = [sequence_info(logp, s, max_length) for s in sequences]
        results.append(max(infos, key=lambda i: normalize(i[1], i[2], alpha)))
    return results


def beam_search(tables, beam_size, alpha, beta=0.0, attention=None):
    """Per example: all beams, best first, as (tokens, score, length, att).

    With `beta`, a finished candidate (and every beam in the final
    ranking) adds `beta * coverage_log(its summed attention)`, from the
    `attention` tables `(B, L, V, Ts)`.
    """
    results = []
    for b, logp in enumerate(log_softmax(tables)):
        max_length, vocab = logp.shape[0], logp.shape[-1]
        weights = None if attention is None else attention[b]

        def rank(candidate, final=False):
            sequence, score, finished, coverage = candidate
            key = normalize(score, len(sequence), alpha)
            if beta and (finished or final):
                key += beta * coverage_log(coverage)
            return -key

        # (sequence, score, finished, coverage)
        beams = [((), 0.0, False, 0.0)]
        for t in range(max_length):
            candidates = []
            for sequence, score, finished, coverage in beams:
                if finished:
                    candidates.append((sequence, score, True, coverage))
                    continue
                prev = sequence[-1] if sequence else START
                if weights is not None:
                    coverage = coverage + weights[t, prev].astype("float64")
                for token in range(vocab):
                    candidates.append(
                        (
                            sequence + (token,),
                            score + logp[t, prev, token],
                            token == END,
                            coverage,
                        )
                    )
            candidates.sort(key=rank)  # stable
            beams = candidates[:beam_size]
        beams.sort(key=lambda c: rank(c, final=True))
        results.append(
            [sequence_info(logp, c[0], max_length, weights) for c in beams]
        )
    return results


# Counter-based sampling noise (`attention_zoo.decoding.counter_random`),
# written here from Chris Wellons's published lowbias32.
MASK = 0xFFFFFFFF


def lowbias32(x):
    """lowbias32 of uint32 values, in uint64 arithmetic masked to 32 bits."""
    x = np.asarray(x, "uint64") & MASK
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK
    x ^= x >> 16
    return x


def np_uniform(row_seeds, step, ids):
    """float32 `(N, M)` in (0, 1) for the rows' seeds `(N,)` at `step`
    and token ids `(N, M)` or `(1, M)`: 23 bits of
    `lowbias32(key ^ lowbias32(id + 0x85EBCA6B))`, where the key is
    `lowbias32(lowbias32(seed) ^ lowbias32(step + 0x9E3779B9))`."""
    step_bits = lowbias32((int(step) + 0x9E3779B9) & MASK)
    keys = lowbias32(lowbias32(np.asarray(row_seeds, "uint64")) ^ step_bits)
    ids = lowbias32((np.asarray(ids, "uint64") + 0x85EBCA6B) & MASK)
    bits = lowbias32(keys[:, None] ^ ids) >> 9
    return ((bits.astype("float32") + 0.5) * 2.0**-23).astype("float32")


def np_gumbel(row_seeds, step, ids):
    """float32 Gumbel noise `-log(-log(u))` of `np_uniform`."""
    u = np_uniform(row_seeds, step, ids)
    return (-np.log(-np.log(u))).astype("float32")


def wide_model(seed=0, batch_size=16, max_length=6):
    """Flat step distributions over 8 tokens (END rare): many choices."""
    tables = random_tables(batch_size, max_length, 8, seed, 0.7)
    tables[..., END] -= 3.0
    return FakeModel(tables)


def run_sample(model, compiled=True, seed=0, **kwargs):
    """`sample_search` on `model`, the seed (an int, or the rows' seeds)
    an argument of the compiled function, as `decode` passes it."""

    def decode(state, seed):
        return sample_search(
            model.step_fn(),
            state,
            START,
            END,
            model.max_length,
            seed=seed,
            **kwargs,
        )

    if compiled:
        decode = jit(decode)
    if isinstance(seed, int):
        seed = np.int32(seed)
    return to_numpy(decode(model.initial_state(), ops.convert_to_tensor(seed)))
