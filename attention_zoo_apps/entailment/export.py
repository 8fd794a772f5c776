"""`EntailmentServingModule`, the SavedModel `EntailmentClassifier.export`
writes (it takes and returns strings), and `warmup_inputs`, the requests
that warm it up in TF Serving."""

import tensorflow as tf

from attention_zoo.export.serving_module import ServingModule
from attention_zoo_apps.common import text_limits
from attention_zoo_apps.common import warmup_texts
from attention_zoo_apps.common.token_ids import PAD_ID
from attention_zoo_apps.entailment.examples import LABELS


class EntailmentServingModule(ServingModule):
    """Tokenizer, model weights and the forward pass in one module.

    `serve(premise, hypothesis)`: tf.string `(B,)` each -> `probabilities`
    float32 `(B, 3)` (columns in `LABELS` order), `label` tf.string `(B,)`,
    `alignment` float32 `(B, premise_len, hypothesis_len)` (row `i`:
    premise token `i`'s weights over the hypothesis tokens; zeros for the
    no-attention baseline), the lengths being the longest tokenized
    sentences of the batch, and `truncated` bool `(B,)`: the premise or
    the hypothesis was longer than the model reads (its first
    `max_length` tokens, see `text_limits.cut_text`). A sentence without
    words (empty or whitespace only), which `attention-zoo predict`
    refuses too, fails the call with an `InvalidArgumentError` naming
    the input and its batch positions. The forward pass is XLA-compiled
    when `jit_compile`.
    """

    def __init__(self, classifier, jit_compile=True):
        super().__init__(name="entailment")
        self.tokenizer = classifier.tokenizer
        self.track_model(classifier.model)
        self._predict = classifier.predict_function(jit_compile)
        self._max_length = classifier.config.max_length
        self._labels = tf.constant(LABELS)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="premise"),
            tf.TensorSpec([None], tf.string, name="hypothesis"),
        ],
        autograph=False,
    )
    def serve(self, premise, hypothesis):
        tf.debugging.assert_equal(
            tf.shape(premise),
            tf.shape(hypothesis),
            message="`premise` and `hypothesis` must have the same length",
        )
        premise_ids, premise_cut = self._read(premise, "premise")
        hypothesis_ids, hypothesis_cut = self._read(hypothesis, "hypothesis")
        result = self._predict(premise_ids, hypothesis_ids)
        probabilities = tf.cast(result["probabilities"], tf.float32)
        alignment = result.get("alignment")
        if alignment is None:
            shape = tf.stack(
                [
                    tf.shape(premise_ids)[0],
                    tf.shape(premise_ids)[1],
                    tf.shape(hypothesis_ids)[1],
                ]
            )
            alignment = tf.zeros(shape, tf.float32)
        return {
            "probabilities": probabilities,
            "label": tf.gather(self._labels, tf.argmax(probabilities, -1)),
            "alignment": alignment,
            "truncated": premise_cut | hypothesis_cut,
        }

    def _read(self, texts, name):
        """The ids `(B, T)` of `texts` (the input `name`) that the model
        reads, its first `max_length` tokens, and bool `(B,)`: the text was
        longer. Texts are cut before they are tokenized
        (`text_limits.cut_text`); one without tokens fails the call."""
        text, cut = text_limits.cut_text(texts, self._max_length)
        ids = self.tokenizer.tokenize(text)  # (B, (T))
        lengths = ids.row_lengths()
        empty = tf.where(lengths == 0)[:, 0]
        check = tf.debugging.Assert(
            tf.size(empty) == 0,
            [
                f"`{name}` must not be empty or whitespace only (as "
                "`attention-zoo predict` refuses it); it is at these batch "
                "positions:",
                empty,
            ],
            summarize=16,
        )
        with tf.control_dependencies([check]):
            ids = ids[:, : self._max_length].to_tensor(PAD_ID)
        return ids, cut | (lengths > self._max_length)


def warmup_inputs(classifier):
    """`serving_default` inputs that meet every length bucket of the
    export once: the model sees both sentences padded to the longer one,
    then to a multiple of `length_multiple` (8) tokens (see
    `EntailmentClassifier.predict_function`), so one pair (batch 1) per
    bucket up to the config's `max_length` (longer sentences are cut): a
    premise of the bucket's longest length and a hypothesis of half that,
    of vocabulary words (see `attention_zoo_apps.common.warmup_texts`)."""
    lengths = warmup_texts.bucket_lengths(
        classifier.config.max_length, classifier.length_multiple
    )
    tokenizer = classifier.tokenizer
    return [
        {
            "premise": warmup_texts.string_array(
                [warmup_texts.text_of_length(tokenizer, length)]
            ),
            "hypothesis": warmup_texts.string_array(
                [warmup_texts.text_of_length(tokenizer, -(-length // 2))]
            ),
        }
        for length in lengths
    ]
