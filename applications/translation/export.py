"""`export_translation`: a SavedModel that takes and returns strings, and
`warmup_inputs`, the requests that warm it up in TF Serving."""

import tensorflow as tf

from applications.common import warmup_texts
from applications.common.search_serving import SearchServingModule
from applications.common.search_serving import best_hypothesis
from applications.common.search_serving import n_best_outputs
from applications.translation.adapter import TranslationAdapter
from applications.translation.sentences import join_attention
from applications.translation.sentences import join_scores
from applications.translation.sentences import join_texts
from applications.translation.sentences import sentence_seeds
from applications.translation.sentences import split_texts

TEXT_SPEC = tf.TensorSpec([None], tf.string, name="text")


class TranslationServingModule(SearchServingModule):
    """Tokenizers, model weights and the decoder in one module.

    `serve(text)`: `text` tf.string `(B,)` -> `translation` tf.string
    `(B,)`, `attention` float32 `(B, target_len, source_len)`, where
    `target_len` is the longest generated translation of the batch (END
    included) and `source_len` the longest tokenized source, and
    `truncated` bool `(B,)`. A text longer than the model reads
    (`max_length` tokens) is translated sentence by sentence in the graph
    (`applications.translation.sentences`): the translations joined with
    one space, the attention block-diagonal (each sentence's map over its
    own tokens, in order); `truncated` says that some of a text was still
    not read (a sentence longer than `max_length` tokens, cut; more than
    `sentences.MAX_SENTENCES` sentences). A text that fits is read whole,
    as it always was. A text without tokens (empty or whitespace) gives
    `""` and zero attention. The search is
    `Translator.decode` (`attention_zoo.decoding.decode`), XLA-compiled
    when `jit_compile`, with the `search` (or its loose `options`) given
    here (see `SearchServingModule`). With `num_results = N > 1` (at most
    the beam size) it also returns `translations` tf.string `(B, N)` and
    `scores` float32 `(B, N)`: the beam's `N` best, best first, for reranking
    (of a split text: each sentence's `k`-th best joined, scores summed);
    `translation` and `attention` are the best one's. With `sampling` it
    also returns `seed` int64 `(B,)`, and `seeded(text, seed)` draws
    with the given seeds (sentence `j` of a split text with its seed plus
    `j`).
    """

    def __init__(self, translator, search=None, jit_compile=True, **options):
        super().__init__(
            "translation",
            translator,
            TEXT_SPEC,
            jit_compile=jit_compile,
            search=search,
            **options,
        )
        self.source_tokenizer = translator.source_tokenizer
        self.target_tokenizer = translator.target_tokenizer
        self.track_model(translator.model)
        self._max_length = translator.config.max_length

    @tf.function(input_signature=[TEXT_SPEC], autograph=False)
    def serve(self, text):
        return self.search_outputs(text)

    def outputs(self, text, seed):
        batch = tf.shape(text)[0]
        sentences = split_texts(self.source_tokenizer, text, self._max_length)
        if seed is not None:
            seed = sentence_seeds(seed, sentences)
        # A sentence without tokens comes back with length 0 and PAD
        # tokens (see `Translator.decode`): "" and zero attention.
        results = self.decode(sentences.source_ids, seed)
        result = best_hypothesis(results, self.num_results)
        rows = sentences.rows
        translations = self.target_tokenizer.detokenize(result["tokens"])
        outputs = {
            "translation": join_texts(translations, rows, batch),
            "attention": join_attention(
                result["attention"], result["lengths"], sentences, batch
            ),
            "truncated": sentences.truncated,
        }
        if self.num_results > 1:
            n_best = n_best_outputs(
                results, self.target_tokenizer.detokenize, "translations"
            )
            outputs["translations"] = join_texts(
                n_best["translations"], rows, batch
            )
            outputs["scores"] = join_scores(n_best["scores"], rows, batch)
        return outputs


def export_translation(
    translator,
    path,
    beam_size=None,
    length_penalty=None,
    coverage_penalty=None,
    num_results=None,
    *,
    search=None,
    jit_compile=None,
    metrics=None,
    data_fingerprint=None,
    **sampling,
):
    """Writes `translator` as a SavedModel to `path`, atomically.

    The `serving_default` signature takes `text` (tf.string `[None]`;
    invalid UTF-8 bytes read as U+FFFD) and returns `translation`
    (tf.string `[None]`, `""` for a text without tokens), `attention`
    (float32 `[None, target_len, source_len]`) and `truncated` (bool
    `[None]`); tokenization, sentence splitting and detokenization run
    inside the graph. A text longer than `max_length` tokens is
    translated sentence by sentence, and `truncated` is true for a text
    of which some was still not read: a sentence longer than
    `max_length` tokens (cut), more than `sentences.MAX_SENTENCES`
    sentences, or more characters than that many sentences can hold
    (cut before tokenization, so a huge request costs little). See
    `TranslationServingModule` and `applications.translation.sentences`;
    the metadata's `input_limits` give the numbers. The decoding
    loop is compiled with XLA when `jit_compile` (`None`: when a GPU is
    visible); `search` is the search, as `Translator.translate` takes it
    (greedy by default; `search=BeamSearch(beam_size=4)`), or its loose
    keyword arguments `beam_size`, `length_penalty`, `coverage_penalty`,
    `num_results` and `sampling` (`sampling`, `temperature`, `top_k`,
    `top_p`). With `num_results = N > 1`
    (at most `beam_size`) it also returns the beam's `N` best as
    `translations` (tf.string `[None, N]`) with their `scores` (float32
    `[None, N]`), as `translate(..., num_results=N)` does.

    With a `Sampling` search (`"temperature"`, `"top_k"` or `"top_p"`,
    with `temperature`, `top_k`, `top_p` as in `translate`) the export
    samples: `serving_default` draws a new seed per text and also
    returns it as `seed` (int64 `[None]`), and the `seeded` signature
    takes `text` and `seed` (int64 `[None]`, one per text) and returns
    the same outputs. A text with seed `s` gets the translation
    `translate([text], seed=[s], ...)` gives, in any batch (see
    `applications.common.search_serving`).

    Loading needs only TensorFlow and TensorFlow Text's ops. The folder
    appears only once complete, with the config, the vocabularies and
    `metadata.json` (with `metrics`, `data_fingerprint` and the search
    under `decoding`, see `attention_zoo.export.save_export`, which
    never replaces an existing version).

    Returns:
        `path`.
    """
    search = translator.search_defaults.resolve(
        search,
        beam_size,
        length_penalty,
        coverage_penalty,
        num_results,
        **sampling,
    )
    return translator.write_export(
        TranslationServingModule,
        path,
        jit_compile,
        metrics,
        data_fingerprint,
        search=search,
    )


def warmup_inputs(translator):
    """`serving_default` inputs that meet every source-length bucket of
    the export once: one `text` (batch 1) per bucket of
    `TranslationAdapter.length_multiple` (8) tokens up to the config's
    `max_length` (longer texts are split), of vocabulary words that the
    source tokenizer turns into the bucket's longest length (see
    `applications.common.warmup_texts`)."""
    lengths = warmup_texts.bucket_lengths(
        translator.config.max_length, TranslationAdapter.length_multiple
    )
    tokenizer = translator.source_tokenizer
    return [
        {
            "text": warmup_texts.string_array(
                [warmup_texts.text_of_length(tokenizer, length)]
            )
        }
        for length in lengths
    ]
