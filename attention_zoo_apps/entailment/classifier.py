"""`EntailmentClassifier`: tokenizer, model and metrics in one object."""

import logging

import keras
import numpy as np
import tensorflow as tf

from attention_zoo import buckets
from attention_zoo_apps.common.batch_padding import pad_to_length_multiple
from attention_zoo_apps.common.bundle import SavedBundle
from attention_zoo_apps.common.inference import compiled_call
from attention_zoo_apps.common.token_ids import PAD_ID
from attention_zoo_apps.common.word_vectors import coverage_report
from attention_zoo_apps.common.word_vectors import load_word_vectors
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.entailment import export as entailment_export
from attention_zoo_apps.entailment.config import EntailmentConfig
from attention_zoo_apps.entailment.examples import LABELS
from attention_zoo_apps.entailment.examples import EntailmentExamples
from attention_zoo_apps.entailment.model import alignment_model
from attention_zoo_apps.entailment.model import build_decomposable_attention

logger = logging.getLogger(__name__)


class EntailmentClassifier(SavedBundle):
    """Premise / hypothesis strings in; label, probabilities, alignment out.

    `fit(train, validation)` takes `EntailmentExamples`: it learns a WordPiece
    vocabulary from the training sentences (unless a tokenizer is given),
    builds `build_decomposable_attention` from the config and trains it;
    `predict` returns labels, probabilities and the premise-to-hypothesis
    alignment; `evaluate` reports accuracy, per-class precision and recall and
    the confusion matrix; `export` writes a SavedModel that takes and returns
    strings.

    Args:
        config: an `EntailmentConfig`. Defaults to `EntailmentConfig()`.
        tokenizer: optional trained `SubwordTokenizer`.
        model: optional built model matching the config and tokenizer.
        strategy: optional `tf.distribute.Strategy` to build and train
            under; `config.batch_size` is then per replica.
        embeddings: optional float array `(vocabulary_size, embedding_dim)`
            to start the embeddings from (see
            `attention_zoo_apps.common.word_vectors`); needs `tokenizer`.

    Example:

    ```python
    data = make_synthetic_entailment(3000)
    classifier = EntailmentClassifier(EntailmentConfig(hidden_units=64))
    classifier.fit(data.examples, epochs=3)
    classifier.predict(["a dog sleeps"], ["an animal sleeps"])["labels"]
    ```
    """

    application = "entailment"
    noun = "classifier"
    config_class = EntailmentConfig
    examples_class = EntailmentExamples
    # `predict_function` pads token ids to a multiple of this many.
    length_multiple = 8
    serving_module = entailment_export.EntailmentServingModule

    def __init__(
        self,
        config=None,
        tokenizer=None,
        model=None,
        embeddings=None,
        strategy=None,
    ):
        super().__init__(config, model, strategy)
        self.tokenizer = tokenizer
        self.embeddings = embeddings

    def input_limits(self):
        """Tokens read per sentence; the rest is cut."""
        return {
            "premise_tokens": self.config.max_length,
            "hypothesis_tokens": self.config.max_length,
        }

    # -- training ---------------------------------------------------------

    def ensure_tokenizer(self, examples):
        """Learns the WordPiece vocabulary from the sentences of
        `examples` unless the classifier has a tokenizer already."""
        if self.tokenizer is None:
            config = self.config
            self.tokenizer = SubwordTokenizer.train(
                list(examples.premises) + list(examples.hypotheses),
                vocabulary_size=config.vocabulary_size,
                lowercase=config.lowercase,
                normalization=config.normalization,
                learn_params={"lower_thresh": config.min_token_count},
            )
        return self.tokenizer

    def use_word_vectors(self, path, examples):
        """Starts the embeddings from a GloVe / word2vec text file.

        Learns the vocabulary from `examples` first (unless there is a
        tokenizer); tokens missing from the file keep random vectors.
        Call before `fit`. Returns the coverage line of
        `attention_zoo_apps.common.word_vectors.coverage_report`.
        """
        vocabulary = self.ensure_tokenizer(examples).vocabulary
        self.embeddings, found = load_word_vectors(
            path,
            vocabulary,
            embedding_dim=self.config.embedding_dim,
            lowercase=self.config.lowercase,
        )
        return coverage_report(found, vocabulary)

    def make_model(self):
        """The config's model (the tokenizer must exist)."""
        config = self.config
        return build_decomposable_attention(
            self.tokenizer.vocabulary_size,
            embedding_dim=config.embedding_dim,
            hidden_units=config.hidden_units,
            intra_attention=config.intra_attention,
            dropout=config.dropout,
            num_classes=len(LABELS),
            attention=config.attention,
            embeddings=self.embeddings,
            max_distance=config.max_distance,
            trainable_embeddings=config.trainable_embeddings,
        )

    def compile_arguments(self):
        """The loss and metrics (`build` adds the optimizer)."""
        return dict(
            loss="sparse_categorical_crossentropy",
            # A metric object, not "accuracy": Keras would make it while
            # tracing the first step, and the new variables retrace it.
            metrics=[keras.metrics.SparseCategoricalAccuracy("accuracy")],
        )

    def pieces(self, texts):
        """The ids of a list (or tensor) of strings, all of them: a
        `tf.RaggedTensor` `(B, None)`, before the model's `max_length`
        cut."""
        return self.tokenizer.tokenize(tf.convert_to_tensor(texts, tf.string))

    def padded(self, pieces):
        """Padded int32 ids `(B, T)` of `pieces`, cut to `max_length`."""
        return pieces[:, : self.config.max_length].to_tensor(PAD_ID)

    def ids(self, texts):
        """Padded int32 ids `(B, T)` of a list (or tensor) of strings."""
        return self.padded(self.pieces(texts))

    def dataset(self, examples, shuffle=False):
        """`({"premise", "hypothesis"}, label)` batches, PAD-filled to the
        batch's longest (on JAX, up to a multiple of `length_multiple`, at
        most `max_length`)."""
        self.check_examples(examples)
        strings = tf.data.Dataset.from_tensor_slices(
            (
                list(examples.premises),
                list(examples.hypotheses),
                np.asarray(examples.labels, "int32"),
            )
        )
        if shuffle:
            strings = strings.shuffle(
                len(examples),
                seed=self.config.seed,
                reshuffle_each_iteration=True,
            )

        # JAX compiles a step per shape: a few lengths, not one a batch.
        bucketed = keras.backend.backend() == "jax"

        def encode(premises, hypotheses, labels):
            inputs = {}
            for key, texts in (
                ("premise", premises),
                ("hypothesis", hypotheses),
            ):
                ids = self.ids(texts)
                if bucketed:
                    ids = pad_to_length_multiple(
                        ids,
                        self.length_multiple,
                        self.config.max_length,
                        PAD_ID,
                    )
                inputs[key] = ids
            return inputs, labels

        return (
            strings.batch(self.global_batch_size)
            .map(
                tf.autograph.experimental.do_not_convert(encode),
                num_parallel_calls=tf.data.AUTOTUNE,
            )
            .prefetch(tf.data.AUTOTUNE)
        )

    def ensure_vocabularies(self, examples):
        self.ensure_tokenizer(examples)

    def clear_compiled(self):
        super().clear_compiled()
        self._explainer = None  # None, or {jit_compile: predict function}

    # -- inference --------------------------------------------------------

    def predict_function(self, jit_compile=True):
        """`(premise_ids, hypothesis_ids) -> dict`, compiled with XLA
        (`attention_zoo_apps.common.inference.compiled_call`).

        Both are PAD-filled to one bucketed shape first (the longer one's
        length rounded up to a multiple of `length_multiple`, see
        `attention_zoo.buckets`), so XLA compiles for a few shapes.
        The dict has `probabilities` `(B, 3)` and, for attention models,
        `alignment` `(B, m, n)`.
        """
        jit_compile = bool(jit_compile)
        if self._explainer is None:
            self._explainer = {}
        if jit_compile not in self._explainer:
            model = self.require_model()
            if self.config.attention:
                model = alignment_model(self.model)
            compiled = compiled_call(model, jit_compile)

            def predict(premise_ids, hypothesis_ids):
                # Both sentences padded to one bucketed length: fewer shapes.
                m, n = tf.shape(premise_ids)[1], tf.shape(hypothesis_ids)[1]
                longest = tf.maximum(m, n)
                premise, batch, _ = buckets.pad_to_buckets(
                    tf.pad(premise_ids, [[0, 0], [0, longest - m]]),
                    self.length_multiple,
                )
                hypothesis, _, _ = buckets.pad_to_buckets(
                    tf.pad(hypothesis_ids, [[0, 0], [0, longest - n]]),
                    self.length_multiple,
                )
                outputs = compiled(
                    {"premise": premise, "hypothesis": hypothesis}
                )
                if not isinstance(outputs, dict):
                    outputs = {"probabilities": outputs}
                result = {
                    "probabilities": buckets.unpad(
                        outputs["probabilities"], batch
                    )
                }
                if "alignment" in outputs:
                    alignment = buckets.unpad(outputs["alignment"], batch, n)
                    result["alignment"] = tf.cast(alignment[:, :m], tf.float32)
                return result

            self._explainer[jit_compile] = predict
        return self._explainer[jit_compile]

    def predict(self, premises, hypotheses, batch_size=256):
        """Classifies pairs of strings.

        Returns:
            A dict with `labels` (list of str), `probabilities` (float32
            array `(N, 3)`, columns in `LABELS` order) and, for attention
            models, `alignment`: a list of float32 arrays `(premise_tokens,
            hypothesis_tokens)`, row `i` the weights of premise token `i`
            over the hypothesis tokens; and `premise_tokens` /
            `hypothesis_tokens`, lists of token lists (str); `truncated`
            (list of bool): whether the premise or the hypothesis was
            longer than the `max_length` tokens the model reads (it was
            cut, as the export cuts it; a warning is logged).

        Raises:
            ValueError: a premise or hypothesis without words (empty or
                whitespace only), naming its positions, as the export and
                `attention-zoo predict` refuse it.
        """
        premises, hypotheses = _pair_lists(premises, hypotheses)
        self.require_model()
        # Tokenized once: the counts say what is empty or cut, the
        # batches below are slices of the same pieces.
        pieces = {
            name: self.pieces(texts)
            for name, texts in (
                ("premises", premises),
                ("hypotheses", hypotheses),
            )
        }
        counts = {
            name: value.row_lengths().numpy() for name, value in pieces.items()
        }
        for name, count in counts.items():
            empty = np.flatnonzero(count == 0).tolist()
            if empty:
                raise ValueError(
                    f"`{name}` must not be empty or whitespace only; these "
                    f"positions are: {empty}"
                )
        truncated = (
            (counts["premises"] > self.config.max_length)
            | (counts["hypotheses"] > self.config.max_length)
        ).tolist()
        if any(truncated):
            logger.warning(
                "pairs %s: the premise or the hypothesis is longer than the "
                "%d tokens the model reads: it was cut",
                np.flatnonzero(truncated).tolist(),
                self.config.max_length,
            )
        predict = self.predict_function()
        probabilities, alignments, premise_tokens, hypothesis_tokens = (
            [],
            [],
            [],
            [],
        )
        vocabulary = self.tokenizer.vocabulary
        for start in range(0, len(premises), batch_size):
            a = self.padded(pieces["premises"][start : start + batch_size])
            b = self.padded(pieces["hypotheses"][start : start + batch_size])
            result = predict(a, b)
            probabilities.append(result["probabilities"].numpy())
            a, b = a.numpy(), b.numpy()
            for row in range(a.shape[0]):
                m, n = (
                    int(np.sum(a[row] != PAD_ID)),
                    int(np.sum(b[row] != PAD_ID)),
                )
                premise_tokens.append([vocabulary[i] for i in a[row, :m]])
                hypothesis_tokens.append([vocabulary[i] for i in b[row, :n]])
                if "alignment" in result:
                    alignments.append(result["alignment"][row, :m, :n].numpy())
        probabilities = (
            np.concatenate(probabilities)
            if probabilities
            else np.zeros((0, len(LABELS)), "float32")
        )
        output = {
            "labels": [LABELS[i] for i in np.argmax(probabilities, axis=-1)],
            "probabilities": probabilities,
            "premise_tokens": premise_tokens,
            "hypothesis_tokens": hypothesis_tokens,
            "truncated": truncated,
        }
        if self.config.attention:
            output["alignment"] = alignments
        return output

    def watch_examples(self, examples, count):
        """The first `count` `EntailmentExamples` as the training logs show
        them (`attention_zoo_apps.common.watching`): per pair a dict with `text`
        (the pair, the predicted and the true label) and, for attention
        models, `attention` `(premise tokens, hypothesis tokens)`,
        labelled by `rows` and `columns`."""
        part = examples.select(range(min(count, len(examples))))
        if not len(part):
            return []
        result = self.predict(part.premises, part.hypotheses)
        shown = []
        for i in range(len(part)):
            shown.append(
                {
                    "text": f"{part.premises[i]!r} / {part.hypotheses[i]!r}: "
                    f"{result['labels'][i]} "
                    f"(true: {LABELS[part.labels[i]]})",
                    "rows": result["premise_tokens"][i],
                    "columns": result["hypothesis_tokens"][i],
                    "row_name": "premise",
                    "column_name": "hypothesis",
                }
            )
            if "alignment" in result:
                shown[-1]["attention"] = result["alignment"][i]
        return shown

    def evaluate(self, examples, batch_size=256):
        """Accuracy, per-class precision and recall, confusion matrix.

        Returns:
            A dict: `accuracy` (float), `precision` and `recall` (dicts
            label -> float; `nan` for a class never predicted / present),
            `confusion` (int array `(3, 3)`, rows the true labels, columns
            the predicted, both in `LABELS` order), `examples` (int) and
            `predictions` (list of str).
        """
        self.check_examples(examples)
        predicted = self.predict(
            examples.premises, examples.hypotheses, batch_size=batch_size
        )["labels"]
        return classification_report(
            examples.labels, [LABELS.index(p) for p in predicted]
        ) | {"predictions": predicted}

    def warmup_inputs(self):
        """One pair per length bucket of the export; see `warmup_inputs`
        of `attention_zoo_apps.entailment.export`."""
        return entailment_export.warmup_inputs(self)


def classification_report(labels, predictions, num_classes=len(LABELS)):
    """Accuracy, per-class precision / recall and the confusion matrix of
    int class ids (see `EntailmentClassifier.evaluate`)."""
    labels = np.asarray(labels, "int64")
    predictions = np.asarray(predictions, "int64")
    confusion = np.zeros((num_classes, num_classes), "int64")
    np.add.at(confusion, (labels, predictions), 1)
    correct = np.diag(confusion).astype("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = correct / confusion.sum(axis=0)
        recall = correct / confusion.sum(axis=1)
    names = LABELS[:num_classes]
    return {
        "accuracy": float(correct.sum() / max(len(labels), 1)),
        "precision": {n: float(p) for n, p in zip(names, precision)},
        "recall": {n: float(r) for n, r in zip(names, recall)},
        "confusion": confusion,
        "examples": int(len(labels)),
    }


def _pair_lists(premises, hypotheses):
    for name, value in (("premises", premises), ("hypotheses", hypotheses)):
        if isinstance(value, (str, bytes)):
            raise TypeError(f"`{name}` must be a list of strings, not a str.")
    premises, hypotheses = list(premises), list(hypotheses)
    if len(premises) != len(hypotheses):
        raise ValueError(
            "`premises` and `hypotheses` must have the same length. "
            f"Received: {len(premises)} and {len(hypotheses)}"
        )
    return premises, hypotheses
