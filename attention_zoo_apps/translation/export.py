"""`TranslationServingModule`, the SavedModel `Translator.export` writes (it
takes and returns strings), and `warmup_inputs`, the requests that warm it
up in TF Serving."""

import tensorflow as tf

from attention_zoo_apps.common import warmup_texts
from attention_zoo_apps.common.search_serving import SearchServingModule
from attention_zoo_apps.common.search_serving import best_hypothesis
from attention_zoo_apps.common.search_serving import n_best_outputs
from attention_zoo_apps.translation.adapter import TranslationAdapter
from attention_zoo_apps.translation.sentences import join_attention
from attention_zoo_apps.translation.sentences import join_scores
from attention_zoo_apps.translation.sentences import join_texts
from attention_zoo_apps.translation.sentences import sentence_seeds
from attention_zoo_apps.translation.sentences import split_texts

TEXT_SPEC = tf.TensorSpec([None], tf.string, name="text")


class TranslationServingModule(SearchServingModule):
    """Tokenizers, model weights and the decoder in one module.

    `serve(text)`: `text` tf.string `(B,)` -> `translation` tf.string
    `(B,)`, `attention` float32 `(B, target_len, source_len)`, where
    `target_len` is the longest generated translation of the batch (END
    included) and `source_len` the longest tokenized source, and
    `truncated` bool `(B,)`. A text longer than the model reads
    (`max_length` tokens) is translated sentence by sentence in the graph
    (`attention_zoo_apps.translation.sentences`): the translations joined with
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
        # `Translator.detokenize`, the placeholders' words put back.
        self._detokenize = translator.detokenize
        self._placeholders = translator.placeholders

    @tf.function(input_signature=[TEXT_SPEC], autograph=False)
    def serve(self, text):
        return self.search_outputs(text)

    def outputs(self, text, seed):
        batch = tf.shape(text)[0]
        sentences = split_texts(
            self.source_tokenizer, text, self._max_length, self._placeholders
        )
        words = sentences.protected_words
        if seed is not None:
            seed = sentence_seeds(seed, sentences)
        # A sentence without tokens comes back with length 0 and PAD
        # tokens (see `Translator.decode`): "" and zero attention.
        results = self.decode(sentences.source_ids, seed)
        result = best_hypothesis(results, self.num_results)
        rows = sentences.rows
        translations = self._detokenize(result["tokens"], words)
        outputs = {
            "translation": join_texts(translations, rows, batch),
            "attention": join_attention(
                result["attention"], result["lengths"], sentences, batch
            ),
            "truncated": sentences.truncated,
        }
        if self.num_results > 1:
            n_best = n_best_outputs(
                results,
                lambda ids: self._detokenize(ids, words, self.num_results),
                "translations",
            )
            outputs["translations"] = join_texts(
                n_best["translations"], rows, batch
            )
            outputs["scores"] = join_scores(n_best["scores"], rows, batch)
        return outputs


def warmup_inputs(translator):
    """`serving_default` inputs that meet every source-length bucket of
    the export once: one `text` (batch 1) per bucket of
    `TranslationAdapter.length_multiple` (8) tokens up to the config's
    `max_length` (longer texts are split), of vocabulary words that the
    source tokenizer turns into the bucket's longest length (see
    `attention_zoo_apps.common.warmup_texts`)."""
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
