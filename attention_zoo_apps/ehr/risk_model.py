"""`RiskModel`: vocabularies, scaler, model and metrics in one object."""

import os

import numpy as np
import tensorflow as tf

from attention_zoo import buckets
from attention_zoo_apps.common.bundle import CONFIG_FILE
from attention_zoo_apps.common.bundle import SavedBundle
from attention_zoo_apps.common.inference import compiled_call
from attention_zoo_apps.common.token_ids import PAD_ID as NOTE_PAD_ID
from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.ehr import export as risk_export
from attention_zoo_apps.ehr.config import EHRConfig
from attention_zoo_apps.ehr.encoding import LENGTH_MULTIPLE
from attention_zoo_apps.ehr.encoding import CodeVocabulary
from attention_zoo_apps.ehr.encoding import ValueScaler
from attention_zoo_apps.ehr.encoding import encode_events
from attention_zoo_apps.ehr.encoding import padded_length
from attention_zoo_apps.ehr.metrics import auprc
from attention_zoo_apps.ehr.metrics import auroc
from attention_zoo_apps.ehr.metrics import brier_score
from attention_zoo_apps.ehr.metrics import calibration_bins
from attention_zoo_apps.ehr.model import attention_model
from attention_zoo_apps.ehr.model import build_risk_model
from attention_zoo_apps.ehr.records import PatientRecords

CODE_VOCABULARY_FILE = "codes.txt"
SCALER_FILE = "value_scaler.json"
NOTE_VOCABULARY_DIR = "note_vocabulary"

# The metrics and the padding multiple, importable from here as before.
__all__ = [
    "CODE_VOCABULARY_FILE",
    "LENGTH_MULTIPLE",
    "NOTE_VOCABULARY_DIR",
    "SCALER_FILE",
    "RiskModel",
    "auprc",
    "auroc",
    "brier_score",
    "calibration_bins",
]


class RiskModel(SavedBundle):
    """Patient records in; risk, attended events and note words out.

    `fit(train, validation)` takes `PatientRecords`: it builds the code
    vocabulary, the value scaler and the note tokenizer from the training
    records (unless given), builds `build_risk_model` from the config and
    trains it, with balanced class weights when `config.class_weighting`;
    `predict` returns the risks and, per patient, the most attended events and
    note words; `evaluate` reports AUROC, AUPRC, the Brier score and
    calibration bins.

    A record is read up to its prediction time only (the data layer drops
    later rows), its last `config.max_events` events and last
    `config.max_note_tokens` note tokens. The model's `times` input is
    the hours before the prediction time (`prediction_time - time`).

    Args:
        config: an `EHRConfig`. Defaults to `EHRConfig()`.
        note_tokenizer: optional trained `SubwordTokenizer` for the notes.
        code_vocabulary: optional `CodeVocabulary`.
        scaler: optional fitted `ValueScaler`.
        model: optional built model matching the above.
        strategy: optional `tf.distribute.Strategy` to build and train
            under; `config.batch_size` is then per replica.

    Example:

    ```python
    data = make_synthetic_patients(1500)
    train, validation, test = split_patients(data.records)
    risk_model = RiskModel(EHRConfig(epochs=5))
    risk_model.fit(train, validation)
    risk_model.evaluate(test)["auroc"]
    risk_model.predict(test)["top_events"][0]  # [(code, time, weight)]
    ```
    """

    application = "ehr"
    noun = "risk model"
    config_class = EHRConfig
    examples_class = PatientRecords
    tokenizer_dirs = {"note_tokenizer": NOTE_VOCABULARY_DIR}
    serving_module = risk_export.RiskServingModule

    def __init__(
        self,
        config=None,
        note_tokenizer=None,
        code_vocabulary=None,
        scaler=None,
        model=None,
        strategy=None,
    ):
        super().__init__(config, model, strategy)
        if not self.config.use_notes:
            self.tokenizer_dirs = {}  # `save_assets` saves no tokenizer
        self.note_tokenizer = note_tokenizer
        self.code_vocabulary = code_vocabulary
        self.scaler = scaler

    def input_limits(self):
        """The last events and note tokens read; older ones are cut."""
        return {
            "events": self.config.max_events,
            "note_tokens": self.config.max_note_tokens
            if self.config.use_notes
            else 0,
        }

    # -- saving -----------------------------------------------------------

    def vocabulary_files(self):
        """The note vocabulary (with notes) and the code list."""
        return super().vocabulary_files() + [CODE_VOCABULARY_FILE]

    def save_assets(self, directory):
        """Config, note vocabulary, code vocabulary and value scaler."""
        super().save_assets(directory)
        self.code_vocabulary.save(os.path.join(directory, CODE_VOCABULARY_FILE))
        self.scaler.save(os.path.join(directory, SCALER_FILE))

    @classmethod
    def load_assets(cls, directory, strategy=None):
        """A built `RiskModel` with the saved assets and fresh weights,
        under `strategy` (None: the default)."""
        with open(os.path.join(directory, CONFIG_FILE)) as f:
            config = cls.config_class.from_json(f.read())
        note_tokenizer = None
        if config.use_notes:
            note_tokenizer = SubwordTokenizer.load(
                os.path.join(directory, NOTE_VOCABULARY_DIR)
            )
        bundle = cls(
            config,
            note_tokenizer=note_tokenizer,
            code_vocabulary=CodeVocabulary.load(
                os.path.join(directory, CODE_VOCABULARY_FILE)
            ),
            scaler=ValueScaler.load(os.path.join(directory, SCALER_FILE)),
            strategy=strategy,
        )
        bundle.ensure_model()
        return bundle

    # -- training ---------------------------------------------------------

    def ensure_assets(self, records):
        """Builds what is missing of the code vocabulary, the value scaler
        and the note tokenizer from (training) `records`."""
        config = self.config
        if self.code_vocabulary is None:
            self.code_vocabulary = CodeVocabulary.build(
                records, min_count=config.code_min_count
            )
        if self.scaler is None:
            self.scaler = ValueScaler.fit(records)
        if config.use_notes and self.note_tokenizer is None:
            notes = [note for note in records.notes if note.strip()]
            if not notes:
                raise ValueError(
                    "The training records have no notes: use "
                    "`EHRConfig(use_notes=False)`."
                )
            self.note_tokenizer = SubwordTokenizer.train(
                notes,
                vocabulary_size=config.note_vocabulary_size,
                lowercase=config.lowercase,
                learn_params={"lower_thresh": config.note_min_count},
            )

    def make_model(self):
        """The config's model (the assets must exist)."""
        config = self.config
        return build_risk_model(
            len(self.code_vocabulary),
            note_vocabulary_size=(
                self.note_tokenizer.vocabulary_size
                if config.use_notes
                else None
            ),
            embedding_dim=config.embedding_dim,
            units=config.units,
            encoder=config.encoder,
            time_encoding=config.time_encoding,
            dropout=config.dropout,
            num_heads=config.num_heads,
        )

    def compile_arguments(self):
        """The loss and metrics (`build` adds the optimizer)."""
        return dict(
            loss="binary_crossentropy",
        )

    def encode(self, records):
        """Model inputs for `records`, NumPy arrays padded to one length.

        Returns:
            A dict `codes` int32 `(N, T)`, `values`, `has_value`, `times`
            float32 `(N, T)` (hours before the prediction time) and, with
            notes, `note` int32 `(N, L)`; plus `event_index` int64 `(N, T)`,
            the index of each column's event in `records.codes[i]` (-1 on
            padding). `T` and `L` are multiples of 16 (see
            `attention_zoo_apps.ehr.encoding.encode_events`).
        """
        self.check_examples(records)
        arrays = encode_events(
            records,
            self.code_vocabulary,
            self.scaler,
            self.config.max_events,
        )
        if self.config.use_notes:
            arrays["note"] = self._note_ids(records.notes)
        return arrays

    def _note_ids(self, notes):
        """int32 `(N, L)`: the last `max_note_tokens` tokens, PAD-filled."""
        if not len(notes):
            return np.zeros((0, LENGTH_MULTIPLE), "int32")
        ids = self.note_tokenizer.tokenize(tf.constant(list(notes), tf.string))
        ids = ids[:, -self.config.max_note_tokens :]
        length = padded_length(int(tf.reduce_max(ids.row_lengths())))
        return ids.to_tensor(NOTE_PAD_ID, shape=(None, length)).numpy()

    def class_weights(self, labels):
        """`{0: w0, 1: w1}`, balanced: `n / (2 n_c)` (1 for an absent
        class); all ones without `config.class_weighting`."""
        labels = np.asarray(labels, "int64")
        if not self.config.class_weighting:
            return {0: 1.0, 1: 1.0}
        counts = np.bincount(labels, minlength=2)
        return {
            c: float(len(labels) / (2 * counts[c])) if counts[c] else 1.0
            for c in (0, 1)
        }

    def dataset(self, records, shuffle=False, weights=None):
        """`(inputs, label (B, 1), sample weight (B,))` batches."""
        arrays = self.encode(records)
        arrays.pop("event_index")
        labels = records.labels.astype("float32")[:, None]
        weights = weights or {0: 1.0, 1: 1.0}
        sample_weights = np.where(
            records.labels == 1, weights[1], weights[0]
        ).astype("float32")
        data = tf.data.Dataset.from_tensor_slices(
            (arrays, labels, sample_weights)
        )
        if shuffle:
            data = data.shuffle(
                len(records),
                seed=self.config.seed,
                reshuffle_each_iteration=True,
            )
        return data.batch(self.global_batch_size).prefetch(tf.data.AUTOTUNE)

    def ensure_vocabularies(self, examples):
        self.ensure_assets(examples)

    def training_dataset(self, examples):
        """Shuffled and weighted by `class_weights`."""
        return self.dataset(
            examples,
            shuffle=True,
            weights=self.class_weights(examples.labels),
        )

    def clear_compiled(self):
        super().clear_compiled()
        self._explainer = None

    # -- inference --------------------------------------------------------

    def predict_function(self):
        """`inputs -> {"risk", "event_attention"[, "note_attention"]}`,
        compiled with XLA; the batch is padded to a bucketed size (see
        `attention_zoo.buckets`) so XLA compiles for few shapes."""
        if self._explainer is None:
            explainer = attention_model(self.require_model())
            compiled = compiled_call(explainer)

            def predict(inputs):
                batch = next(iter(inputs.values())).shape[0]
                padded = int(buckets.bucket_batch_size(batch))
                inputs = {
                    key: np.pad(value, [(0, padded - batch), (0, 0)])
                    for key, value in inputs.items()
                }
                outputs = compiled(inputs)
                return {k: v.numpy()[:batch] for k, v in outputs.items()}

            self._explainer = predict
        return self._explainer

    def predict(self, records, top_k=3, batch_size=256):
        """Risks and attention of `PatientRecords` (labels unused).

        Returns:
            A dict with `risk` (float32 `(N,)`), `top_events` (per patient a
            list of up to `top_k` `(code, time, weight)`, the most attended
            events, `time` in hours since admission as in the records) and,
            with notes, `note_words` (per patient up to `top_k` `(word,
            weight)`, the weights of a word's pieces summed) and
            `event_attention` / `note_attention` (per patient float32
            arrays over its kept events / note tokens).
        """
        self.check_examples(records)
        predict = self.predict_function()
        risks, top_events, note_words = [], [], []
        event_attention, note_attention = [], []
        vocabulary = (
            self.note_tokenizer.vocabulary if self.note_tokenizer else []
        )
        for start in range(0, len(records), batch_size):
            part = records.select(
                range(start, min(start + batch_size, len(records)))
            )
            arrays = self.encode(part)
            index = arrays.pop("event_index")
            outputs = predict(arrays)
            risks.append(outputs["risk"][:, 0])
            for row in range(len(part)):
                kept = index[row] >= 0
                weights = outputs["event_attention"][row][kept]
                event_attention.append(weights)
                order = np.argsort(-weights, kind="stable")[:top_k]
                top_events.append(
                    [
                        (
                            part.codes[row][index[row, j]],
                            float(part.times[row][index[row, j]]),
                            float(weights[j]),
                        )
                        for j in order
                    ]
                )
                if "note_attention" in outputs:
                    ids = arrays["note"][row]
                    weights = outputs["note_attention"][row][ids != NOTE_PAD_ID]
                    note_attention.append(weights)
                    note_words.append(
                        _top_words(
                            [vocabulary[i] for i in ids[ids != NOTE_PAD_ID]],
                            weights,
                            top_k,
                        )
                    )
        output = {
            "risk": (
                np.concatenate(risks).astype("float32")
                if risks
                else np.zeros((0,), "float32")
            ),
            "top_events": top_events,
            "event_attention": event_attention,
        }
        if self.config.use_notes:
            output["note_words"] = note_words
            output["note_attention"] = note_attention
        return output

    def warmup_inputs(self):
        """One patient per event-count bucket of the export; see
        `attention_zoo_apps.ehr.export.warmup_inputs`."""
        return risk_export.warmup_inputs(self)

    def watch_examples(self, records, count):
        """The first `count` `PatientRecords` as the training logs show
        them (`attention_zoo_apps.common.watching`): per patient a dict with
        `text` (the risk and the label) and `attention` `(1, events read)`,
        the weights of the events the model read (its last ones, oldest
        first; `columns`: `code time`)."""
        part = records.select(range(min(count, len(records))))
        if not len(part):
            return []
        result = self.predict(part)
        shown = []
        for i in range(len(part)):
            weights = result["event_attention"][i]
            start = len(part.codes[i]) - len(weights)  # the last are read
            events = zip(part.codes[i][start:], part.times[i][start:])
            shown.append(
                {
                    "text": f"{part.patient_ids[i]}: risk "
                    f"{result['risk'][i]:.3f} (label {part.labels[i]})",
                    "attention": np.reshape(weights, (1, -1)),
                    "rows": ["attention"],
                    "columns": [f"{c} {t:.0f}h" for c, t in events],
                    "row_name": "",
                    "column_name": "events read",
                }
            )
        return shown

    def evaluate(self, records, num_bins=10, batch_size=256):
        """AUROC, AUPRC, Brier score and calibration of `records`.

        Returns:
            A dict: `auroc`, `auprc` (average precision), `brier` (floats;
            `nan` for AUROC / AUPRC without both classes), `calibration`
            (see `calibration_bins`), `patients`, `positives` (ints) and
            `risk` (the predictions).
        """
        risk = self.predict(records, top_k=0, batch_size=batch_size)["risk"]
        labels = records.labels
        return {
            "auroc": auroc(labels, risk),
            "auprc": auprc(labels, risk),
            "brier": brier_score(labels, risk),
            "calibration": calibration_bins(labels, risk, num_bins),
            "patients": int(len(labels)),
            "positives": int(labels.sum()),
            "risk": risk,
        }


def _top_words(pieces, weights, top_k):
    """Glues `##` pieces to their word (weights summed), then merges the
    occurrences of a word (weights summed: the attention the note's copies
    of the word got in all); the top `top_k` distinct `(word, weight)`,
    heaviest first, ties in note order."""
    words, totals = [], []
    for piece, weight in zip(pieces, weights):
        if piece.startswith("##") and words:
            words[-1] += piece[2:]
            totals[-1] += float(weight)
        else:
            words.append(piece)
            totals.append(float(weight))
    merged = {}  # word -> summed weight, in order of first occurrence
    for word, total in zip(words, totals):
        merged[word] = merged.get(word, 0.0) + total
    words, totals = list(merged), list(merged.values())
    order = np.argsort(-np.asarray(totals), kind="stable")[:top_k]
    return [(words[j], totals[j]) for j in order]
