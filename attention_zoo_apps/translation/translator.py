"""`Translator`: tokenizers, model and compiled decoding in one object."""

import json
import logging
import random

import keras
import numpy as np
import tensorflow as tf

from attention_zoo.decoding import searches
from attention_zoo_apps.common import text_limits
from attention_zoo_apps.common.generating_bundle import GeneratingBundle
from attention_zoo_apps.common.hypotheses import hypothesis_arrays
from attention_zoo_apps.common.hypotheses import per_input
from attention_zoo_apps.common.hypotheses import return_value
from attention_zoo_apps.translation import data
from attention_zoo_apps.translation import export as translation_export
from attention_zoo_apps.translation import recipe
from attention_zoo_apps.translation import sentences
from attention_zoo_apps.translation.config import TranslationConfig
from attention_zoo_apps.translation.evaluate import corpus_scores
from attention_zoo_apps.translation.model import build_translation_model
from attention_zoo_apps.translation.model import model_adapter
from attention_zoo_apps.translation.placeholders import Placeholders
from attention_zoo_apps.translation.vocabularies import learn_tokenizers

logger = logging.getLogger(__name__)


class Translator(GeneratingBundle):
    """A trainable, exportable translator for plain strings.

    `fit(train, validation)` takes `(source, target)` string pairs: it
    learns WordPiece vocabularies from the training pairs (unless
    tokenizers are given), builds the model named by the config and trains
    it with teacher forcing; `translate` runs greedy or beam search compiled
    whole with XLA (`attention_zoo.decoding.decode` over the model's
    adapter, `model_adapter`); `evaluate` reports corpus BLEU and chrF
    (sacrebleu); `export` writes a SavedModel that takes and returns
    strings.

    Args:
        config: a `TranslationConfig`. Defaults to `TranslationConfig()`.
        source_tokenizer: optional trained `SubwordTokenizer` of the
            sources.
        target_tokenizer: optional trained `SubwordTokenizer` of the
            targets.
        model: optional built model matching the config and tokenizers.
        strategy: optional `tf.distribute.Strategy` to build and train
            under; `config.batch_size` is then per replica.

    Example:

    ```python
    pairs = data.make_synthetic_pairs(2000).pairs
    translator = Translator(TranslationConfig(units=64, embedding_dim=32))
    translator.fit(pairs[:1800], pairs[1800:], epochs=3)
    translator.translate(["..."])
    ```
    """

    application = "translation"
    noun = "translator"
    # Greedy search; a beam's length penalty 0.6 (GNMT's).
    search_defaults = searches.SearchDefaults(length_penalty=0.6)
    clipnorm = 1.0
    config_class = TranslationConfig
    tokenizer_dirs = {
        "source_tokenizer": "source_vocab",
        "target_tokenizer": "target_vocab",
    }
    serving_module = translation_export.TranslationServingModule

    def __init__(
        self,
        config=None,
        source_tokenizer=None,
        target_tokenizer=None,
        model=None,
        strategy=None,
    ):
        super().__init__(config, model, strategy)
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer

    def input_limits(self):
        """Source tokens read per sentence (the rest is cut), sentences
        read per text (a text longer than `text_tokens` is translated
        sentence by sentence), characters read per text (cut before it
        is tokenized) and tokens generated per sentence; see
        `attention_zoo_apps.translation.sentences`."""
        max_length = self.config.max_length
        return {
            "text_tokens": max_length,
            "sentences": sentences.MAX_SENTENCES,
            "text_characters": text_limits.characters_read(
                sentences.max_text_tokens(max_length)
            ),
            "translation_tokens": max_length + 1,
        }

    # -- training ---------------------------------------------------------

    def _ensure_tokenizers(self, pairs):
        self.source_tokenizer, self.target_tokenizer = learn_tokenizers(
            self.config, pairs, self.source_tokenizer, self.target_tokenizer
        )

    @property
    def placeholders(self):
        """The `Placeholders` of `config.placeholders` (tokenizers must
        exist), or `None` when the config copies nothing."""
        if not self.config.placeholders:
            return None
        return Placeholders(
            self.source_tokenizer,
            self.target_tokenizer,
            self.config.placeholders,
        )

    def make_model(self):
        """The config's model (tokenizers must exist)."""
        return build_translation_model(
            self.config,
            self.source_tokenizer.vocabulary_size,
            self.target_tokenizer.vocabulary_size,
        )

    def learning_rate(self):
        return recipe.learning_rate(self.config)

    def compile_arguments(self):
        """The loss (`recipe.training_loss`) and metrics (`build` adds the
        optimizer)."""
        return dict(
            loss=recipe.training_loss(self.config),
            # The logits carry the target's padding mask, so Keras leaves
            # padded positions out of the loss and the accuracy.
            metrics=[keras.metrics.SparseCategoricalAccuracy("accuracy")],
        )

    def dataset(self, pairs, shuffle=False):
        return data.make_translation_dataset(
            pairs,
            self.source_tokenizer,
            self.target_tokenizer,
            batch_size=self.global_batch_size,
            max_length=self.config.max_length,
            shuffle=shuffle,
            seed=self.config.seed,
            # JAX compiles a training step per shape: lengths in steps of 8.
            length_multiple=8 if keras.backend.backend() == "jax" else None,
            placeholders=self.placeholders,
        )

    def as_examples(self, given):
        """`given` pairs as a list (`fit` reads them more than once)."""
        return list(given)

    def ensure_vocabularies(self, pairs):
        self._ensure_tokenizers(pairs)

    # -- inference --------------------------------------------------------

    def source_ids(self, texts):
        """Padded int32 source ids `(B, Ts)` for a list of strings."""
        ids = data.encode_sources(
            self.source_tokenizer,
            tf.constant(texts, tf.string),
            self.config.max_length,
            self.placeholders,
        )
        return ids

    def detokenize(self, ids, protected_words=None, repeats=1):
        """Target ids `(M, L)` -> tf.string `(M,)`; with placeholders, each
        written with the word it stands for, of `protected_words` `(M /
        repeats, (k))` (row `i` serving translations `i * repeats` to
        `(i + 1) * repeats - 1`: a beam's N best; see
        `Placeholders.restore`)."""
        texts = self.target_tokenizer.detokenize(ids)
        placeholders = self.placeholders
        if placeholders is None:
            return texts
        return placeholders.restore(texts, protected_words, repeats)

    def make_adapter(self):
        """The model's `DecodingAdapter` (`model_adapter`); `adapter` keeps
        it, with the compiled searches it caches."""
        return model_adapter(self.model, self.config)

    def decode(
        self,
        source_ids,
        beam_size=None,
        length_penalty=None,
        jit_compile=True,
        *,
        search=None,
        seed=None,
        **options,
    ):
        """Source ids `(B, Ts)` -> the search's dict, by
        `attention_zoo.decoding.decode`.

        `search` is a search (`Greedy()` by default; see
        `attention_zoo.decoding.searches`), or its loose keyword
        arguments `beam_size`, `length_penalty` (a beam's default 0.6)
        and `options` (`coverage_penalty`, `num_results`, `sampling`,
        `temperature`, `top_k`, `top_p`); `seed` is the sampling seed.
        The dict has `tokens` `(B, L)`, `lengths` `(B,)`, `scores` `(B,)`
        and `attention` `(B, L, Ts)`, with `L = config.max_length + 1`
        (with `num_results = N > 1`: `(B, N, L)`, `(B, N)`, `(B, N)`,
        `(B, N, L, Ts)`). The search is compiled whole with XLA (a
        graph-mode `tf.function` with `jit_compile=False`) once per
        configuration and bucket of shapes (batch to a power of two,
        length to a multiple of 8); seeds and `num_results` compile
        nothing new. A source without tokens (an empty or whitespace-only
        text) has nothing to translate: its row gets length 0, PAD tokens
        (so `""`), score 0 and zero attention.
        """
        return self.search_decode(
            source_ids,
            self.config.max_length + 1,
            jit_compile,
            search,
            seed,
            beam_size=beam_size,
            length_penalty=length_penalty,
            **options,
        )

    def translate(
        self,
        texts,
        beam_size=None,
        length_penalty=None,
        return_attention=False,
        *,
        search=None,
        seed=None,
        return_scores=False,
        return_truncated=False,
        **options,
    ):
        """Translates a list of strings.

        `search` is greedy search by default, a `BeamSearch` (GNMT's
        length and coverage penalties; a length penalty left `None` is
        0.6) or a `Sampling` (see `attention_zoo.decoding.searches`), or
        a name of one (`"beam"`, `"top_p"`, ...): `translate(texts,
        search=BeamSearch(beam_size=4))`. Or the search's loose keyword
        arguments, its aliases: `beam_size`, `length_penalty` (default
        0.6) and `options`: `coverage_penalty` (`beta`; `0` is off),
        `num_results`, `sampling` (`"temperature"`, `"top_k"` or
        `"top_p"`), `temperature`, `top_k`, `top_p`. With sampling,
        `seed`: an int gives text `i` the
        seed `seed + i`, a list one seed per text; a text draws the same
        translation with the same seed in any batch, and an export's
        `seeded` signature with the same seed draws it too.
        `num_results=N` (at most `beam_size`) returns the `N` best beams
        of each text, best first (ranked by the normalized score). See
        `attention_zoo.decoding.decode`.

        A text longer than the model reads (`config.max_length` tokens) is
        translated sentence by sentence, as the export does
        (`attention_zoo_apps.translation.sentences`): the sentences'
        translations joined with one space (the `N` best: each sentence's
        `k`-th best, joined; scores summed), sentence `j` of a text
        sampled with its seed plus `j`. A text of which some was still not
        read (a sentence longer than `max_length` tokens, more than
        `sentences.MAX_SENTENCES` sentences) is logged as a warning, or
        with `return_truncated=True` returned as a flag instead.

        Returns:
            A list of strings; with `num_results > 1` a list (per text)
            of `N` strings. With `return_attention=True` also, in the same
            nesting, float32 arrays `(target_tokens, source_tokens)` cut
            to the generated target tokens (END included) and the source
            tokens (block by block, per sentence, for a split text); with
            `return_scores=True` also the log-probabilities (float, sum
            over the generated tokens, END included); with
            `return_truncated=True` also a list of bools (per text: some
            of it was not read). Several are returned as a tuple in that
            order.
        """
        search = self.search_defaults.resolve(
            search,
            beam_size=beam_size,
            length_penalty=length_penalty,
            **options,
        )
        num_results = search.num_results
        if isinstance(texts, str):
            raise TypeError("`texts` must be a list of strings, not a str.")
        texts = list(texts)
        self.require_model()
        wanted = [return_attention, return_scores, return_truncated]
        if not texts:
            return return_value([], *[[] for want in wanted if want])
        split = sentences.split_texts(
            self.source_tokenizer,
            tf.constant(texts, tf.string),
            self.config.max_length,
            self.placeholders,
        )
        rows = split.rows.numpy()
        if len(rows) != len(texts):  # some text was split
            seed = _sentence_seeds(seed, split, len(texts))
        result = self.decode(split.source_ids, search=search, seed=seed)
        found = hypothesis_arrays(result, num_results)
        count, hypotheses, steps = found["tokens"].shape
        strings = self.detokenize(
            np.reshape(found["tokens"], (count * hypotheses, steps)),
            split.protected_words,
            hypotheses,
        )
        joined = sentences.join_texts(
            tf.reshape(strings, (count, hypotheses)), rows, len(texts)
        )
        translations = [s.decode("utf-8") for s in joined.numpy().ravel()]
        truncated = [bool(x) for x in split.truncated.numpy()]
        extras = []
        if return_attention:
            source_lengths = np.sum(np.asarray(split.source_ids) != 0, axis=1)
            extras.append(
                per_input(
                    sentences.joined_attention_arrays(
                        found, source_lengths, rows, len(texts)
                    ),
                    num_results,
                )
            )
        if return_scores:
            scores = np.zeros((len(texts), hypotheses), "float64")
            np.add.at(scores, rows, found["scores"])
            extras.append(per_input(scores.ravel().tolist(), num_results))
        if return_truncated:
            extras.append(truncated)
        elif any(truncated):
            cut = ", ".join(str(i) for i, x in enumerate(truncated) if x)
            logger.warning(
                "translate: texts %s (0-based) have a sentence longer than "
                "the model reads (%d tokens) or more than %d sentences: "
                "only what it read is translated",
                cut,
                self.config.max_length,
                sentences.MAX_SENTENCES,
            )
        return return_value(per_input(translations, num_results), *extras)

    def explain(self, text, beam_size=None, length_penalty=None, search=None):
        """One translation with its tokens and attention, for pictures
        (the search as `translate` takes it).

        Returns:
            A dict with `translation` (str), `source_tokens` and
            `target_tokens` (lists of str, as the model saw and produced
            them, END included) and `attention` `(target, source)`.
        """
        return self._explanations([text], beam_size, length_penalty, search)[0]

    def watch_examples(self, pairs, count):
        """The first `count` `(source, target)` pairs as the training logs
        show them (`attention_zoo_apps.common.watching`), translated in one
        batch: per pair a dict with `text` (source, translation,
        reference) and `attention` `(translation tokens, source tokens)`,
        labelled by `rows` and `columns` (as `explain` gives them)."""
        pairs = list(pairs)[:count]
        if not pairs:
            return []
        explained = self._explanations([source for source, _ in pairs])
        return [
            {
                "text": f"{source} -> {example['translation']} "
                f"(reference: {target})",
                "attention": example["attention"],
                "rows": example["target_tokens"],
                "columns": example["source_tokens"],
                "row_name": "translation",
                "column_name": "source",
            }
            for (source, target), example in zip(pairs, explained)
        ]

    def _explanations(
        self, texts, beam_size=None, length_penalty=None, search=None
    ):
        """`explain`'s dict for each of `texts`, decoded in one batch."""
        source_ids = self.source_ids(texts)
        result = self.decode(
            source_ids, beam_size, length_penalty, search=search
        )
        # NumPy, whatever the backend's tensors (JAX arrays have no
        # `.numpy()`).
        result = {k: keras.ops.convert_to_numpy(v) for k, v in result.items()}
        placeholders = self.placeholders
        translations = self.detokenize(
            result["tokens"],
            placeholders and placeholders.protect(tf.constant(texts))[1],
        )
        vocab_in = self.source_tokenizer.vocabulary
        vocab_out = self.target_tokenizer.vocabulary
        explained = []
        for row, translation in enumerate(translations.numpy()):
            length = int(result["lengths"][row])
            source = [int(i) for i in np.asarray(source_ids)[row] if i != 0]
            target = [int(i) for i in result["tokens"][row, :length]]
            explained.append(
                {
                    "translation": translation.decode("utf-8"),
                    "source_tokens": [vocab_in[i] for i in source],
                    "target_tokens": [vocab_out[i] for i in target],
                    "attention": result["attention"][
                        row, :length, : len(source)
                    ],
                }
            )
        return explained

    def evaluate(
        self,
        pairs,
        beam_size=None,
        length_penalty=None,
        batch_size=256,
        *,
        search=None,
    ):
        """Corpus BLEU and chrF (sacrebleu) of `translate` on the pairs
        (a `ValueError` when there are none), with the search `translate`
        takes (greedy by default).

        Returns:
            A dict: `bleu` and `chrf`, the standard cased scores (a model
            that lower-cases, `config.lowercase`, loses what it does not
            write); `bleu_lowercase` and `chrf_lowercase`, both sides
            lower-cased; `bleu_signature` (sacreBLEU's, for papers),
            `examples` and `hypotheses`.
        """
        pairs = list(pairs)
        if not pairs:
            raise ValueError("`pairs` is empty: there is nothing to score.")
        hypotheses = []
        # `translate`'s search: the loose options or, given, `search`.
        given = {} if search is None else {"search": search}
        for start in range(0, len(pairs), batch_size):
            chunk = [source for source, _ in pairs[start : start + batch_size]]
            hypotheses += self.translate(
                chunk, beam_size, length_penalty, **given
            )
        return {
            **corpus_scores(hypotheses, [target for _, target in pairs]),
            "examples": len(pairs),
            "hypotheses": hypotheses,
        }

    def warmup_inputs(self):
        """One `text` per source-length bucket of the export; see
        `warmup_inputs` of `attention_zoo_apps.translation.export`."""
        return translation_export.warmup_inputs(self)

    def describe(self):
        return json.loads(self.config.to_json())


def _sentence_seeds(seed, split, count):
    """`translate`'s `seed` for `count` texts as one int64 seed per
    sentence of `split` (see `sentences.sentence_seeds`)."""
    if seed is None:
        seed = random.getrandbits(32)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seed = int(seed) + np.arange(count)
    seed = np.asarray(seed)
    if seed.shape != (count,) or not np.issubdtype(seed.dtype, np.integer):
        raise ValueError(
            "`seed` must be an int, an integer tensor of one seed per "
            f"text ({count} texts), or None. Received: seed={seed!r}"
        )
    return sentences.sentence_seeds(tf.constant(seed, tf.int64), split)
