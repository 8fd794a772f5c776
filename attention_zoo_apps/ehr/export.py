"""`RiskServingModule`, the SavedModel `RiskModel.export` writes: it takes
raw events and a note.

The serving graph does what `RiskModel.encode` does in NumPy: it drops
padding (empty codes) and events after the prediction time, sorts the rest
by time, keeps the last `max_events`, looks the codes up (unknown codes give
the OOV id), standardises the values per code and turns the times into
hours before the prediction time; it cuts the note to the characters that
hold its last `max_note_tokens` tokens (`text_limits.cut_text`: a long
note is not tokenized whole), tokenizes it with the saved WordPiece
tokenizer and keeps its last `max_note_tokens` tokens. Then the
model runs (compiled with XLA when `jit_compile`) on a batch padded to a
bucketed shape. `warmup_inputs` gives the requests that warm it up in TF
Serving.
"""

import math

import numpy as np
import tensorflow as tf

from attention_zoo import buckets
from attention_zoo.export.serving_module import ServingModule
from attention_zoo_apps.common import text_limits
from attention_zoo_apps.common import warmup_texts
from attention_zoo_apps.common.token_ids import PAD_ID as NOTE_PAD_ID
from attention_zoo_apps.ehr.encoding import EVENT_PAD_ID
from attention_zoo_apps.ehr.encoding import LENGTH_MULTIPLE
from attention_zoo_apps.ehr.encoding import OOV_ID
from attention_zoo_apps.ehr.model import attention_model

# The most hours between an event and the prediction time the model sees
# (about 1,100 years; further apart is read as this far).
MAX_HOURS = 1e7


class RiskServingModule(ServingModule):
    """Code table, scaler, tokenizer and the model in one module (the model
    XLA-compiled when `jit_compile`).

    `serve(codes, values, times, prediction_time, note)` (shapes below, `B`
    patients, `N` event slots) returns:

    - `risk` float32 `(B,)`;
    - `event_attention` float32 `(B, N)`: the attention weight of each
      input event, in the input's positions; 0 on padding and on the
      events the model did not read (after `prediction_time`, or older
      than the last `max_events`);
    - `note_tokens` tf.string `(B, L)`: the note's WordPiece tokens that
      the model read (its last `max_note_tokens`), `""` after a note's end;
    - `note_attention` float32 `(B, L)`: their weights (0 on padding).
      Without notes (`use_notes=False`) both have `L = 0`;
    - `truncated` bool `(B,)`: the model did not read all of the
      patient's record up to `prediction_time`: it had more than
      `max_events` events, or (with notes) a note longer than
      `max_note_tokens` tokens.
    """

    def __init__(self, risk_model, jit_compile=True):
        super().__init__(name="ehr_risk")
        config = risk_model.config
        self.track_model(risk_model.model)
        self.note_tokenizer = risk_model.note_tokenizer
        self._max_events = config.max_events
        self._max_note_tokens = config.max_note_tokens
        self._use_notes = config.use_notes
        codes = risk_model.code_vocabulary.codes
        self._code_ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(codes[OOV_ID + 1 :], tf.string),
                tf.range(OOV_ID + 1, len(codes), dtype=tf.int32),
            ),
            default_value=OOV_ID,
        )
        # The scaler's codes (not only the vocabulary's: a rare code maps
        # to OOV but keeps its own mean and std). Row `len(stats)` is for
        # codes without statistics, whose scaled value is 0.
        stats = risk_model.scaler.stats
        names = sorted(stats)
        self._scaler_rows = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(names, tf.string),
                tf.range(len(names), dtype=tf.int32),
            ),
            default_value=len(names),
        )
        self._means = tf.constant(
            np.array([stats[c][0] for c in names] + [0.0], "float64")
        )
        self._stds = tf.constant(
            np.array([stats[c][1] for c in names] + [1.0], "float64")
        )
        self._known = tf.constant(
            np.array([1.0] * len(names) + [0.0], "float64")
        )
        self._clip = float(risk_model.scaler.clip)
        if self._use_notes:
            self._note_vocabulary = tf.constant(
                risk_model.note_tokenizer.vocabulary, tf.string
            )
        explainer = attention_model(risk_model.model)
        self._explainer = explainer
        self._predict = tf.function(
            lambda inputs: explainer(inputs, training=False),
            jit_compile=bool(jit_compile),
            autograph=False,
        )

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.string, name="codes"),
            tf.TensorSpec([None, None], tf.float32, name="values"),
            tf.TensorSpec([None, None], tf.float32, name="times"),
            tf.TensorSpec([None], tf.float32, name="prediction_time"),
            tf.TensorSpec([None], tf.string, name="note"),
        ],
        autograph=False,
    )
    def serve(self, codes, values, times, prediction_time, note):
        batch = tf.shape(codes)[0]
        codes, values, times, prediction_time, note = self._checked(
            codes, values, times, prediction_time, note
        )
        inputs, positions, valid, truncated = self._events(
            codes, values, times, prediction_time
        )
        if self._use_notes:
            note_ids, note_cut = self._note_ids(note)
            inputs["note"] = note_ids
            truncated = truncated | note_cut
        # Rows of padding up to a bucketed batch size: fewer XLA shapes.
        padded = buckets.bucket_batch_size(batch)
        inputs = {
            key: tf.pad(value, [[0, padded - batch], [0, 0]])
            for key, value in inputs.items()
        }
        outputs = self._predict(inputs)
        risk = tf.cast(outputs["risk"][:batch, 0], tf.float32)
        attention = tf.cast(outputs["event_attention"][:batch], tf.float32)
        # Each kept event's weight back to its input position; the padding
        # columns all point at the extra column `N`, cut off again.
        width = tf.shape(codes)[1]
        rows = tf.broadcast_to(
            tf.range(batch)[:, None], tf.shape(positions)
        )  # (B, T)
        indices = tf.stack(
            [rows, tf.where(valid, positions, width)], axis=-1
        )  # (B, T, 2)
        event_attention = tf.scatter_nd(
            indices,
            tf.where(valid, attention, 0.0),
            tf.stack([batch, width + 1]),
        )[:, :width]
        if self._use_notes:
            note_attention = tf.cast(
                outputs["note_attention"][:batch], tf.float32
            )
            note_length = tf.reduce_max(
                tf.reduce_sum(tf.cast(note_ids != NOTE_PAD_ID, tf.int32), 1)
            )
            note_attention = note_attention[:, :note_length]
            note_ids = note_ids[:, :note_length]
            note_tokens = tf.where(
                note_ids != NOTE_PAD_ID,
                tf.gather(self._note_vocabulary, note_ids),
                "",
            )
        else:
            note_attention = tf.zeros(tf.stack([batch, 0]), tf.float32)
            note_tokens = tf.zeros(tf.stack([batch, 0]), tf.string)
        return {
            "risk": risk,
            "event_attention": event_attention,
            "note_tokens": note_tokens,
            "note_attention": note_attention,
            "truncated": truncated,
        }

    def _checked(self, codes, values, times, prediction_time, note):
        """The inputs, passed on only once checked, so that bad input is
        an `InvalidArgumentError` naming it (not whichever op would fail on
        it first): `codes`, `values` and `times` of one shape, one
        `prediction_time` and `note` a patient, finite `prediction_time`s,
        finite `times` for events (padding may hold anything). Codes come
        back stripped, so a whitespace-only code is padding, as in the
        loaders."""
        batch = tf.shape(codes)[0]
        same = "`codes`, `values` and `times` must have one shape"
        shapes = [
            tf.debugging.assert_equal(
                tf.shape(values), tf.shape(codes), message=same
            ),
            tf.debugging.assert_equal(
                tf.shape(times), tf.shape(codes), message=same
            ),
            tf.debugging.assert_equal(
                tf.stack([tf.size(prediction_time), tf.size(note)]),
                tf.stack([batch, batch]),
                message="`prediction_time` and `note` need one entry a patient",
            ),
        ]
        with tf.control_dependencies(shapes):
            codes = tf.strings.strip(codes)
            bad_times = tf.where(
                (codes != "") & ~tf.math.is_finite(times)
            )  # (K, 2): [patient, event]
            bad_cutoffs = tf.where(~tf.math.is_finite(prediction_time))
        numbers = [
            tf.debugging.Assert(
                tf.size(bad_cutoffs) == 0,
                [
                    "`prediction_time` must be finite (hours since "
                    "admission); it is not for the patients at",
                    bad_cutoffs[:, 0],
                ],
                summarize=16,
            ),
            tf.debugging.Assert(
                tf.size(bad_times) == 0,
                [
                    "`times` must be finite for every event with a code; "
                    "it is not at [patient, event]",
                    bad_times,
                ],
                summarize=16,
            ),
        ]
        with tf.control_dependencies(numbers):
            return tuple(
                tf.identity(x)
                for x in (codes, values, times, prediction_time, note)
            )

    def _events(self, codes, values, times, prediction_time):
        """The model's event inputs `(B, T)`, `T` a multiple of 16, per
        column the input position `(B, T)` and whether it holds an event,
        and bool `(B,)`: more events up to the prediction time than
        `max_events`, the older ones cut."""
        # One extra padding column, so that gathers work when `N` is 0.
        codes = tf.pad(codes, [[0, 0], [0, 1]], constant_values="")
        values = tf.pad(values, [[0, 0], [0, 1]])
        times = tf.pad(times, [[0, 0], [0, 1]])
        keep = (codes != "") & (times <= prediction_time[:, None])
        # Stable sort by time, the dropped events last.
        order = tf.argsort(
            tf.where(keep, times, math.inf), axis=1, stable=True
        )  # (B, N + 1)
        count = tf.reduce_sum(tf.cast(keep, tf.int32), axis=1)  # (B,)
        start = tf.maximum(count - self._max_events, 0)  # the last ones
        kept = count - start
        length = tf.maximum(
            -(-tf.reduce_max(tf.concat([kept, [0]], 0)) // LENGTH_MULTIPLE)
            * LENGTH_MULTIPLE,
            LENGTH_MULTIPLE,
        )
        column = tf.range(length)[None, :]  # (1, T)
        valid = column < kept[:, None]  # (B, T)
        last = tf.shape(codes)[1] - 1
        source = tf.minimum(start[:, None] + column, last)
        positions = tf.where(
            valid, tf.gather(order, source, batch_dims=1), last
        )  # (B, T)
        codes = tf.gather(codes, positions, batch_dims=1)
        values = tf.cast(tf.gather(values, positions, batch_dims=1), "float64")
        times = tf.gather(times, positions, batch_dims=1)
        ids = tf.where(valid, self._code_ids.lookup(codes), EVENT_PAD_ID)
        # As `ValueScaler.transform`, in float64: (value - mean) / std,
        # clipped; 0 and has_value 0 for NaN / inf.
        present = tf.math.is_finite(values) & valid
        row = self._scaler_rows.lookup(codes)
        scaled = (values - tf.gather(self._means, row)) / tf.gather(
            self._stds, row
        )
        scaled = tf.where(present, scaled * tf.gather(self._known, row), 0.0)
        scaled = tf.clip_by_value(scaled, -self._clip, self._clip)
        # Hours before the prediction time, as `RiskModel.encode`; clipped
        # so that finite times far apart cannot overflow float32 (to inf,
        # then NaN in the time features).
        before = tf.cast(prediction_time, "float64")[:, None] - tf.cast(
            times, "float64"
        )
        before = tf.clip_by_value(before, -MAX_HOURS, MAX_HOURS)
        inputs = {
            "codes": ids,
            "values": tf.cast(scaled, tf.float32),
            "has_value": tf.cast(present, tf.float32),
            "times": tf.where(valid, tf.cast(before, tf.float32), 0.0),
        }
        return inputs, positions, valid, count > self._max_events

    def _note_ids(self, note):
        """int32 `(B, L)`: the last `max_note_tokens` token ids, padded to
        a multiple of 16 (as `RiskModel._note_ids`), and bool `(B,)`: the
        note was longer. The note is cut before it is tokenized
        (`text_limits.cut_text`)."""
        note, cut = text_limits.cut_text(
            note, self._max_note_tokens, keep="last"
        )
        ids = self.note_tokenizer.tokenize(note)
        cut = cut | (ids.row_lengths() > self._max_note_tokens)
        ids = ids[:, -self._max_note_tokens :]
        longest = tf.reduce_max(tf.concat([ids.row_lengths(), [0]], 0))
        length = tf.maximum(
            -(-tf.cast(longest, tf.int32) // LENGTH_MULTIPLE) * LENGTH_MULTIPLE,
            LENGTH_MULTIPLE,
        )
        dense = ids.to_tensor(NOTE_PAD_ID)
        return tf.pad(dense, [[0, 0], [0, length - tf.shape(dense)[1]]]), cut


def warmup_inputs(risk_model):
    """`serving_default` inputs that meet every event-count bucket of the
    export once.

    The export pads the events it reads (the last `max_events` before
    `prediction_time`) and the note's tokens (its last `max_note_tokens`)
    each to a multiple of `LENGTH_MULTIPLE`. Patient `i` (batch 1) has the
    largest event count of event bucket `i` (known codes in turn, values
    1, one an hour, all before `prediction_time`) and, with notes, a note
    of the largest length of note bucket `i` (vocabulary words, see
    `attention_zoo_apps.common.warmup_texts`); the shorter list of buckets
    repeats its last one, so there is a patient per bucket of the longer
    list. Without notes the note is `""`. The model compiles once per pair
    of lengths: these meet every bucket of each, not every pair.
    """
    config = risk_model.config
    events = warmup_texts.bucket_lengths(config.max_events, LENGTH_MULTIPLE)
    notes = [0]
    if config.use_notes:
        notes = warmup_texts.bucket_lengths(
            config.max_note_tokens, LENGTH_MULTIPLE
        )
    codes = risk_model.code_vocabulary.codes[OOV_ID + 1 :] or ["warmup"]
    inputs = []
    for i in range(max(len(events), len(notes))):
        count = events[min(i, len(events) - 1)]
        length = notes[min(i, len(notes) - 1)]
        note = ""
        if length:
            note = warmup_texts.text_of_length(
                risk_model.note_tokenizer, length
            )
        inputs.append(
            {
                "codes": warmup_texts.string_array(
                    [[codes[j % len(codes)] for j in range(count)]]
                ),
                "values": np.ones([1, count], "float32"),
                "times": np.arange(count, dtype="float32")[np.newaxis],
                "prediction_time": np.array([count], "float32"),
                "note": warmup_texts.string_array([note]),
            }
        )
    return inputs
