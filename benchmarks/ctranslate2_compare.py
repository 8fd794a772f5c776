"""CTranslate2's greedy translations of our source ids beside ours.

For a model `benchmarks.ctranslate2_convert` wrote from a Transformer
`Translator`: `translate_ids` decodes a batch of our source ids with
CTranslate2 (`beam_size=1`, at most `config.max_length + 1` steps, END
allowed at the first step, scores not divided by the length: the search
`Translator.decode` runs), `our_ids` gives `Translator.decode`'s in the
same form, and `compare` sets them side by side.
"""

import os

import ctranslate2
import keras
import numpy as np

from attention_zoo_apps.common import token_ids


def source_tokens(translator, source_ids):
    """Our source ids `(B, Ts)`, 0-padded, as CTranslate2 takes them: per
    row the source vocabulary's tokens, PAD dropped."""
    vocabulary = translator.source_tokenizer.vocabulary
    rows = np.asarray(keras.ops.convert_to_numpy(source_ids))
    return [
        [vocabulary[i] for i in row if i != token_ids.PAD_ID] for row in rows
    ]


def search_options(translator):
    """`translate_batch`'s arguments for the greedy search
    `Translator.decode` runs: at most `config.max_length` source tokens
    and `config.max_length + 1` steps."""
    max_length = translator.config.max_length
    return dict(
        beam_size=1,
        max_input_length=max_length,
        max_decoding_length=max_length + 1,
        # CTranslate2 forbids END at the first step by default.
        min_decoding_length=0,
        # The raw sum of log-probabilities, not divided by the length.
        length_penalty=0.0,
    )


def translate_ids(model, translator, source_ids, **options):
    """CTranslate2's greedy translations of our source ids.

    Each row's ids (PAD dropped) become the source vocabulary's tokens,
    `model.translate_batch` decodes them greedily for at most
    `config.max_length + 1` steps, as `Translator.decode` does (END may
    come first; sources cut at `config.max_length` tokens), and the
    tokens come back as target ids without END. A row without tokens
    is not translated: `[]`, score 0, as `Translator.decode` gives it.

    Args:
        model: a `ctranslate2.Translator`, or the folder `convert` wrote
            (loaded on the CPU).
        translator: the `Translator` it was converted from (its config
            and vocabularies).
        source_ids: int `(B, Ts)` source ids, 0-padded.
        **options: more `translate_batch` arguments (`compute_type`
            belongs to the `ctranslate2.Translator`).

    Returns:
        `(ids, scores)`: per row, the list of target ids (END cut) and
        the sum of the tokens' log-probabilities, END included (a float).
    """
    if isinstance(model, (str, os.PathLike)):
        model = ctranslate2.Translator(os.fspath(model), device="cpu")
    target_ids = {
        token: i
        for i, token in enumerate(translator.target_tokenizer.vocabulary)
    }
    sources = source_tokens(translator, source_ids)
    filled = [i for i, tokens in enumerate(sources) if tokens]
    arguments = dict(
        search_options(translator), return_end_token=False, return_scores=True
    )
    arguments.update(options)
    results = []
    if filled:
        results = model.translate_batch(
            [sources[i] for i in filled], **arguments
        )
    ids = [[] for _ in sources]
    scores = [0.0] * len(sources)
    for i, result in zip(filled, results):
        ids[i] = [target_ids[token] for token in result.hypotheses[0]]
        scores[i] = float(result.scores[0])
    return ids, scores


def our_ids(translator, source_ids, jit_compile=True):
    """`Translator.decode`'s greedy translations in `translate_ids`'s form:
    per row the target ids up to END (END left out; `[]` for a source
    without tokens) and the scores. `jit_compile=False` decodes in a
    graph without XLA (quicker to compile, the same search)."""
    result = translator.decode(source_ids, jit_compile=jit_compile)
    tokens = np.asarray(keras.ops.convert_to_numpy(result["tokens"]))
    lengths = np.asarray(keras.ops.convert_to_numpy(result["lengths"]))
    scores = np.asarray(keras.ops.convert_to_numpy(result["scores"]))
    ids = []
    for row, length in zip(tokens, lengths):
        row = [int(i) for i in row[:length]]
        if row and row[-1] == token_ids.END_ID:
            row = row[:-1]
        ids.append(row)
    return ids, [float(s) for s in scores]


def compare(model, translator, source_ids, jit_compile=True, **options):
    """Ours and CTranslate2's greedy translations of `source_ids` side by
    side (`jit_compile` is `our_ids`', `options` `translate_ids`').

    Returns:
        A dict: `ours` and `theirs` (per row the target ids, END cut),
        `our_scores` and `their_scores` (log-probabilities, END
        included) and `differ`, the rows whose tokens differ.
    """
    ours, our_scores = our_ids(translator, source_ids, jit_compile)
    theirs, their_scores = translate_ids(
        model, translator, source_ids, **options
    )
    return {
        "ours": ours,
        "theirs": theirs,
        "our_scores": our_scores,
        "their_scores": their_scores,
        "differ": [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b],
    }
