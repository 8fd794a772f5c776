"""`build_risk_model`: seq2vec attention over a patient's events and note.

Each event `j` is a code `c_j`, a standardised value `v_j` with a flag
`m_j` (1 where the event had a value) and a time `t_j` in hours. Its input
vector is `E[c_j] + W [v_j, m_j, time features of t_j]` (the code embedding
plus a small projection). An encoder reads the events in order (a
bidirectional GRU, or a multi-head self-attention block), then
`AttentionPooling` (a learned query) weighs the events into one vector; its
weights are the "which events mattered" explanation. The note, when the
model has one, is read the same way: word embedding, encoder, its own
attention pooling. The vectors are concatenated and a small network gives
the risk `sigmoid(...)`.

Padding (code id 0, note id 0) is masked everywhere, so the risk and the
attention of a record do not depend on how far it was padded.
"""

import math

import keras
from keras import ops

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo.layers import AttentionPooling
from attention_zoo.layers import MultiHead
from attention_zoo_apps.ehr.options import ENCODERS

EVENT_ATTENTION_LAYER = "event_attention"
NOTE_ATTENTION_LAYER = "note_attention"
TIME_PERIODS = (6.0, 24.0, 168.0)  # hours, the periods of the sinusoids


@keras.saving.register_keras_serializable(package="ehr", name="EventFeatures")
class EventFeatures(keras.layers.Layer):
    """Stacks `values`, `has_value` and time features -> `(B, T, F)`.

    The output carries the mask `codes != 0` (padding), so that it adds to
    the code embedding without losing the mask (`Add` drops the mask when
    one input has none).

    The time features of `t` (hours) are `sign(t) log1p(|t|)` and, with
    `time_encoding=True`, `sin` and `cos` of `2 pi t / P` for each period
    `P` of `TIME_PERIODS`: `F = 3` or `3 + 2 * len(TIME_PERIODS)`.

    Args:
        time_encoding: bool, add the sinusoids. Defaults to `True`.

    Call arguments:
        codes: int `(B, T)`, 0 = padding (only for the mask).
        values, has_value, times: float `(B, T)`.
    """

    def __init__(self, time_encoding=True, **kwargs):
        super().__init__(**kwargs)
        self.time_encoding = bool(time_encoding)

    @property
    def num_features(self):
        return 3 + (2 * len(TIME_PERIODS) if self.time_encoding else 0)

    def call(self, codes, values, has_value, times):
        values = ops.cast(values, self.compute_dtype)
        has_value = ops.cast(has_value, self.compute_dtype)
        times = ops.cast(times, "float32")
        features = [
            values,
            has_value,
            ops.cast(ops.sign(times) * ops.log1p(ops.abs(times)), values.dtype),
        ]
        if self.time_encoding:
            for period in TIME_PERIODS:
                angle = times * (2.0 * math.pi / period)
                features.append(ops.cast(ops.sin(angle), values.dtype))
                features.append(ops.cast(ops.cos(angle), values.dtype))
        return ops.stack(features, axis=-1)

    def compute_mask(self, codes, previous_mask=None):
        return ops.not_equal(codes, 0)

    def compute_output_shape(
        self, codes_shape, values_shape, has_value_shape, times_shape
    ):
        return (*values_shape, self.num_features)

    def get_config(self):
        config = super().get_config()
        config.update({"time_encoding": self.time_encoding})
        return config


def build_risk_model(
    code_vocabulary_size,
    note_vocabulary_size=None,
    embedding_dim=128,
    units=128,
    encoder="gru",
    time_encoding=True,
    dropout=0.2,
    num_heads=4,
    name="risk_model",
):
    """An attention model of a patient's risk from events (and a note).

    Args:
        code_vocabulary_size: int, number of code ids (0 padding, 1 OOV,
            see `attention_zoo_apps.ehr.encoding.CodeVocabulary`).
        note_vocabulary_size: int or None, number of note token ids (0
            padding); `None` builds a model without the note input.
        embedding_dim: int, width of the code and word embeddings.
            Defaults to `128`.
        units: int, width of the encoder outputs (the GRU has `units // 2`
            per direction), of the attention pooling and the hidden layer.
            Defaults to `128`.
        encoder: `"gru"` (bidirectional GRU) or `"multihead"` (one
            multi-head self-attention block, residual, layer norm and a
            feed-forward layer). Defaults to `"gru"`.
        time_encoding: bool, add sinusoids of the event times to
            `sign(t) log1p(|t|)`. Defaults to `True`.
        dropout: float in `[0, 1)`, on the embedded inputs and before the
            hidden layer. Defaults to `0.2`.
        num_heads: int, heads of the `"multihead"` encoder (`units` must
            be a multiple). Defaults to `4`.
        name: model name.

    Returns:
        A `keras.Model` with inputs `{"codes": int32 (B, T) (0 = padding),
        "values": float32 (B, T), "has_value": float32 (B, T), "times":
        float32 (B, T)}` plus `"note": int32 (B, L)` with a note vocabulary,
        and output the risk, float32 `(B, 1)` (also under mixed precision).
        Use `attention_model` for the attention weights.

    Example:

    ```python
    model = build_risk_model(
        code_vocabulary_size=200, note_vocabulary_size=500
    )
    model.compile("adam", "binary_crossentropy")
    risk = model({"codes": c, "values": v, "has_value": m, "times": t,
                  "note": n})  # (B, 1)
    ```
    """
    check_positive_int("code_vocabulary_size", code_vocabulary_size)
    if note_vocabulary_size is not None:
        check_positive_int("note_vocabulary_size", note_vocabulary_size)
    check_positive_int("embedding_dim", embedding_dim)
    check_positive_int("units", units)
    check_positive_int("num_heads", num_heads)
    check_rate("dropout", dropout)
    check_choice("encoder", encoder, ENCODERS)
    if encoder == "gru" and units % 2:
        raise ValueError(
            "`units` must be even with the GRU encoder (two directions). "
            f"Received: units={units}"
        )
    if encoder == "multihead" and units % num_heads:
        raise ValueError(
            "`units` must be a multiple of `num_heads`. Received: "
            f"units={units}, num_heads={num_heads}"
        )

    inputs = {
        "codes": keras.Input((None,), dtype="int32", name="codes"),
        "values": keras.Input((None,), dtype="float32", name="values"),
        "has_value": keras.Input((None,), dtype="float32", name="has_value"),
        "times": keras.Input((None,), dtype="float32", name="times"),
    }
    embedded = keras.layers.Embedding(
        code_vocabulary_size,
        embedding_dim,
        mask_zero=True,
        name="code_embedding",
    )(inputs["codes"])
    features = EventFeatures(time_encoding, name="event_features")(
        inputs["codes"], inputs["values"], inputs["has_value"], inputs["times"]
    )
    features = keras.layers.Dense(embedding_dim, name="feature_projection")(
        features
    )
    events = keras.layers.Add(name="event_inputs")([embedded, features])
    events = keras.layers.Dropout(dropout, name="event_dropout")(events)
    events = _encode(events, encoder, units, num_heads, "event")
    pooled, _ = AttentionPooling(units, name=EVENT_ATTENTION_LAYER)(
        events, return_attention_scores=True
    )
    parts = [pooled]
    if note_vocabulary_size is not None:
        inputs["note"] = keras.Input((None,), dtype="int32", name="note")
        words = keras.layers.Embedding(
            note_vocabulary_size,
            embedding_dim,
            mask_zero=True,
            name="note_embedding",
        )(inputs["note"])
        words = keras.layers.Dropout(dropout, name="note_dropout")(words)
        words = _encode(words, encoder, units, num_heads, "note")
        note, _ = AttentionPooling(units, name=NOTE_ATTENTION_LAYER)(
            words, return_attention_scores=True
        )
        parts.append(note)
        hidden = keras.layers.Concatenate(name="patient")(parts)
    else:
        hidden = pooled
    hidden = keras.layers.Dropout(dropout, name="head_dropout")(hidden)
    hidden = keras.layers.Dense(units, activation="relu", name="head_dense")(
        hidden
    )
    logit = keras.layers.Dense(1, name="logit")(hidden)
    risk = keras.layers.Activation("sigmoid", dtype="float32", name="risk")(
        logit
    )
    return keras.Model(inputs, risk, name=name)


def attention_model(model):
    """A model sharing `model`'s weights with outputs `{"risk": (B, 1),
    "event_attention": (B, T)}` and, with a note, `"note_attention": (B,
    L)`: the attention pooling weights, zero on padding, summing to 1 over
    a record's events (all zero for a record with no events / no note),
    float32."""
    outputs = {"risk": model.output}
    layer_names = {
        "event_attention": EVENT_ATTENTION_LAYER,
        "note_attention": NOTE_ATTENTION_LAYER,
    }
    for key, layer_name in layer_names.items():
        try:
            layer = model.get_layer(layer_name)
        except ValueError:
            continue
        outputs[key] = keras.layers.Activation(
            "linear", dtype="float32", name=f"{key}_float32"
        )(layer.output[1])
    return keras.Model(
        model.inputs, outputs, name=f"{model.name}_with_attention"
    )


def _encode(x, encoder, units, num_heads, prefix):
    """The sequence encoder; keeps the Keras mask of `x`."""
    if encoder == "gru":
        return keras.layers.Bidirectional(
            keras.layers.GRU(units // 2, return_sequences=True),
            name=f"{prefix}_gru",
        )(x)
    x = keras.layers.Dense(units, name=f"{prefix}_input_projection")(x)
    attended = MultiHead(
        num_heads, units // num_heads, name=f"{prefix}_self_attention"
    )(x, x)
    x = keras.layers.Add(name=f"{prefix}_attention_residual")([x, attended])
    x = keras.layers.LayerNormalization(name=f"{prefix}_attention_norm")(x)
    hidden = keras.layers.Dense(
        units, activation="relu", name=f"{prefix}_feed_forward"
    )(x)
    x = keras.layers.Add(name=f"{prefix}_feed_forward_residual")([x, hidden])
    return keras.layers.LayerNormalization(name=f"{prefix}_feed_forward_norm")(
        x
    )
