"""RNN encoder-decoder translator with attention, and its decoding adapter.

`build_rnn_translator` builds the encoder-decoder of Bahdanau et al. (2015)
and Luong et al. (2015) as a functional `keras.Model`; `make_rnn_adapter`
wraps a built model as a `DecodingAdapter` for `attention_zoo.decoding`
(greedy and beam search), one target token per step, with the attention
keys projected once (monotonic attention also carries its previous
alignment in the decoder state).
"""

import re

import keras
from keras import ops

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo.layers.additive_attention import AdditiveAttention
from attention_zoo.layers.bilinear_attention import BilinearAttention
from attention_zoo.layers.local_attention import LocalAttention
from attention_zoo.layers.monotonic_attention import MonotonicAttention
from attention_zoo_apps.translation.adapter import TranslationAdapter
from attention_zoo_apps.translation.options import ATTENTIONS

# Local-p's half-width D: 2 D + 1 = 17 source tokens, about the length of
# a long Tatoeba sentence (Luong et al. used D = 10 on WMT's longer ones).
LOCAL_WINDOW = 8
CELL_TYPES = ("gru", "lstm")


def build_rnn_translator(
    source_vocabulary_size,
    target_vocabulary_size,
    attention="additive",
    cell="gru",
    embedding_dim=256,
    units=512,
    encoder_layers=1,
    bidirectional=True,
    dropout=0.1,
    name="rnn_translator",
    dtype=None,
):
    """Builds an RNN encoder-decoder translator with attention.

    Encoder: `source_embedding` (`mask_zero=True`), then `encoder_layers`
    RNNs (`encoder_0`, ...; GRU or LSTM of `units`, `Bidirectional` when
    `bidirectional`) giving the encoder states `h_j` `(B, Ts, E)` with
    `E = 2 * units` (bidirectional) or `units`. The `bridge` layer
    (`Dense(units, tanh)`) maps the final encoder state(s) to the decoder's
    initial state (`bridge_cell` does the same for an LSTM's cell state).

    Decoder (teacher forced): `target_embedding` (`mask_zero=True`), one RNN
    `decoder_rnn` over `target_in` giving `s_t` `(B, Tt, units)`; the
    `attention` layer with query `s_t` over the encoder states gives the
    context `c_t = sum_j a_tj h_j`; then (Luong et al., eq. 5)
    `h~_t = tanh(W_c [c_t; s_t])` (`attention_combine`), dropout, and
    `logits = W_s h~_t` (`logits`, float32). With `attention=None` the
    decoder sees the source only through its initial state (the fixed-size
    bottleneck of Sutskever et al. 2014): `h~_t = tanh(W_c s_t)`.

    Attention: `"additive"` is `AdditiveAttention(units)` (Bahdanau);
    `"general"`, `"dot"` and `"scaled_dot"` are `BilinearAttention(score=...)`
    (Luong). Dot scores need equal widths, so when `E != units` a linear
    `memory` layer projects the encoder states to `units` first.
    `"monotonic"` is `MonotonicAttention(units)` (Raffel et al. 2017, the
    additive energy plus a learned bias, started at 0 so `p = 1/2` and the
    alignment moves about one source position per target token): trained
    and decoded with the expected (soft) alignments, so decoding equals
    teacher forcing; no sigmoid noise, as no hard decision is ever taken.
    `"local"` is Luong's local-p, `LocalAttention(window=LOCAL_WINDOW,
    mode="predictive", score="general", units=units)`: each target token
    predicts its source position `p_t` from `s_t` and attends to
    `[p_t - 8, p_t + 8]` under a Gaussian (the paper's best local model;
    local-m's `p_t = t` assumes equal lengths and word order, which
    Spanish and English only roughly share).

    Masking: token id 0 is padding. The source mask hides padded source
    positions from the attention and holds the encoder RNNs' states over
    them; the target mask holds the decoder RNN's state over padded target
    positions and travels with the logits, so Keras losses ignore them.
    Padding appended to either input changes no real position's logits.

    Args:
        source_vocabulary_size: int, source vocabulary size (ids `[0, V_s)`).
        target_vocabulary_size: int, target vocabulary size (ids `[0, V_t)`).
        attention: str or None, one of `"additive"`, `"general"`, `"dot"`,
            `"scaled_dot"`, `"monotonic"`, `"local"`, `None`. Defaults to
            `"additive"`.
        cell: str, `"gru"` or `"lstm"`. Defaults to `"gru"`.
        embedding_dim: int, width of both embeddings. Defaults to `256`.
        units: int, width of every RNN (per direction) and of the attention,
            bridge and combine layers. Defaults to `512`.
        encoder_layers: int, number of stacked encoder RNNs. Defaults to `1`.
        bidirectional: bool, bidirectional encoder RNNs. Defaults to `True`.
        dropout: float in `[0, 1)`, dropout before the logits layer.
            Defaults to `0.1`.
        name: str, the model's name. Defaults to `"rnn_translator"`.
        dtype: optional dtype policy of every layer but `logits` (which is
            always float32). Defaults to `None` (the global policy).

    Returns:
        A `keras.Model` with inputs `{"source": int32 (B, Ts), "target_in":
        int32 (B, Tt)}` and output logits float32 `(B, Tt, V_t)`.

    Example:

    ```python
    model = build_rnn_translator(8000, 8000, attention="additive")
    logits = model({"source": source_ids, "target_in": target_in})
    result = decode(
        make_rnn_adapter(model), source_ids,
        start_id=2, end_id=3, max_length=50, beam_size=4,
    )
    ```

    References:
        Bahdanau, Cho, Bengio, "Neural Machine Translation by Jointly
        Learning to Align and Translate", ICLR 2015,
        https://arxiv.org/abs/1409.0473.
        Luong, Pham, Manning, "Effective Approaches to Attention-based
        Neural Machine Translation", EMNLP 2015,
        https://arxiv.org/abs/1508.04025.
        Raffel, Luong, Liu, Weiss, Eck, "Online and Linear-Time Attention
        by Enforcing Monotonic Alignments", ICML 2017,
        https://arxiv.org/abs/1704.00784.
    """
    _validate(
        source_vocabulary_size=source_vocabulary_size,
        target_vocabulary_size=target_vocabulary_size,
        attention=attention,
        cell=cell,
        embedding_dim=embedding_dim,
        units=units,
        encoder_layers=encoder_layers,
        dropout=dropout,
    )
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    target_in = keras.Input(shape=(None,), dtype="int32", name="target_in")

    # Encoder: (B, Ts) -> (B, Ts, E), plus the last layer's final states.
    x = keras.layers.Embedding(
        source_vocabulary_size,
        embedding_dim,
        mask_zero=True,
        dtype=dtype,
        name="source_embedding",
    )(source)
    for i in range(encoder_layers):
        last = i == encoder_layers - 1
        rnn_name = f"encoder_{i}_rnn" if bidirectional else f"encoder_{i}"
        rnn = _rnn(cell, units, return_state=last, dtype=dtype, name=rnn_name)
        if bidirectional:
            rnn = keras.layers.Bidirectional(
                rnn, dtype=dtype, name=f"encoder_{i}"
            )
        outputs = rnn(x)
        x = outputs[0] if last else outputs
    encoder_outputs, final_states = x, outputs[1:]

    # Bridge: final state(s) of the encoder -> initial decoder state(s).
    # GRU states are [h] per direction, LSTM states [h, c] per direction.
    per_direction = 2 if cell == "lstm" else 1
    initial_state = [
        _bridge(final_states[0::per_direction], units, dtype, "bridge")
    ]
    if cell == "lstm":
        initial_state.append(
            _bridge(final_states[1::2], units, dtype, "bridge_cell")
        )

    # Decoder RNN, teacher forced: (B, Tt) -> s_t (B, Tt, units).
    y = keras.layers.Embedding(
        target_vocabulary_size,
        embedding_dim,
        mask_zero=True,
        dtype=dtype,
        name="target_embedding",
    )(target_in)
    states = _rnn(cell, units, dtype=dtype, name="decoder_rnn")(
        y, initial_state=initial_state
    )

    features = states
    if attention is not None:
        memory = encoder_outputs
        encoder_width = 2 * units if bidirectional else units
        if attention in ("dot", "scaled_dot") and encoder_width != units:
            memory = keras.layers.Dense(
                units, use_bias=False, dtype=dtype, name="memory"
            )(encoder_outputs)
        # Keras fills query_mask / value_mask from the embeddings' masks.
        context = _attention(attention, units, dtype)(states, memory)
        features = keras.layers.Concatenate(
            dtype=dtype, name="attention_concat"
        )([context, states])  # [c_t; s_t]: (B, Tt, dv + units)
    features = keras.layers.Dense(
        units, activation="tanh", dtype=dtype, name="attention_combine"
    )(features)
    features = keras.layers.Dropout(dropout, dtype=dtype, name="dropout")(
        features
    )
    logits = keras.layers.Dense(
        target_vocabulary_size, dtype="float32", name="logits"
    )(features)
    return keras.Model(
        {"source": source, "target_in": target_in}, logits, name=name
    )


class RNNAdapter(TranslationAdapter):
    """Step-by-step decoding of a model from `build_rnn_translator`.

    A `DecodingAdapter` (see `attention_zoo.decoding.decode`):
    `encode(source_ids)` returns a dict of batch-leading tensors
    (`memory`); `initial_state(memory)` the decoder state; `step(token_ids,
    state, memory, index) -> (logits, state, attention)` with `token_ids`
    int32 `(N,)`, `logits` float32 `(N, V_t)` and attention weights
    float32 `(N, Ts)` (zeros for a model without attention). The state is
    a tuple: `(h,)` for a GRU decoder, `(h, c)` for an LSTM, and with
    monotonic attention the previous alignment float32 `(N, Ts)` after
    them (`MonotonicAttention.initial_alignment` at first). Every part of
    the state has the rows leading, so beam search reorders the alignment
    with its beam like the RNN state.

    `encode` runs the model's encoder layers and projects the attention keys
    once (`precompute_keys`); a step embeds one token, runs one step of the
    decoder RNN's cell and attends with the prepared keys, so feeding the
    true previous tokens reproduces the teacher-forced logits. Monotonic
    attention steps with `MonotonicAttention.step` from the previous
    alignment (the expected alignment, as in training: the layer is in
    parallel mode); local attention calls the layer on the one query
    (local-p needs no state, and its general score no prepared keys). Steps
    use Keras layers and `keras.ops` only, and compile inside
    `ops.while_loop` under XLA on both backends.

    Memory keys: `"source_mask"` bool `(N, Ts)`, `"value"` `(N, Ts, dv)`
    (the attended encoder states), `"keys"` (the prepared keys; absent
    without attention and with local attention), `"initial_h"` `(N, units)`
    and, for an LSTM, `"initial_c"`.

    Args:
        model: a `keras.Model` from `build_rnn_translator`.
    """

    def __init__(self, model):
        self.model = model
        self._embedding = model.get_layer("target_embedding")
        self._cell = model.get_layer("decoder_rnn").cell
        self._combine = model.get_layer("attention_combine")
        self._logits = model.get_layer("logits")
        self._attention = _maybe_layer(model, "attention")
        self._is_lstm = isinstance(self._cell, keras.layers.LSTMCell)
        self._is_monotonic = isinstance(self._attention, MonotonicAttention)
        self._is_local = isinstance(self._attention, LocalAttention)
        encoders = [
            layer
            for layer in model.layers
            if re.fullmatch(r"encoder_\d+", layer.name)
        ]
        # The last encoder RNN returns [sequences, *final_states].
        value = encoders[-1].output[0]  # (B, Ts, E)
        memory_layer = _maybe_layer(model, "memory")
        if memory_layer is not None:
            value = memory_layer.output
        outputs = {
            "value": value,
            "initial_h": model.get_layer("bridge").output,
        }
        if self._is_lstm:
            outputs["initial_c"] = model.get_layer("bridge_cell").output
        self._encoder = keras.Model(
            model.get_layer("source").output, outputs, name="encoder"
        )

    def encode(self, source_ids):
        """`(B, Ts)` int source ids -> the memory dict (see the class)."""
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        memory = dict(self._encoder(source_ids, training=False))
        memory["source_mask"] = ops.not_equal(source_ids, 0)
        if self._attention is not None and not self._is_local:
            memory["keys"] = self._attention.precompute_keys(memory["value"])
        return memory

    def initial_state(self, memory):
        """The decoder state before the first step: `(h,)` or `(h, c)`,
        then the initial alignment with monotonic attention."""
        state = (memory["initial_h"],)
        if self._is_lstm:
            state += (memory["initial_c"],)
        if self._is_monotonic:
            state += (self._attention.initial_alignment(memory["value"]),)
        return state

    def step(self, token_ids, state, memory, index):
        """One target token for `N` rows; see the class docstring."""
        source_mask = memory["source_mask"]
        # The embedding's weights directly: calling the layer would attach
        # a padding mask that the cell cannot take.
        inputs = ops.take(
            self._embedding.embeddings, ops.cast(token_ids, "int32"), 0
        )
        inputs = ops.cast(inputs, self._embedding.compute_dtype)  # (N, e)
        num_cell_states = 2 if self._is_lstm else 1
        query, cell_state = self._cell(
            inputs, list(state[:num_cell_states]), training=False
        )
        next_state = tuple(cell_state)
        if self._attention is None:
            features = query
            weights = ops.zeros(ops.shape(source_mask), "float32")
        else:
            context, weights = self._attend(query, state, memory)
            features = ops.concatenate(
                [context, ops.cast(query, context.dtype)], axis=-1
            )
            if self._is_monotonic:
                next_state += (weights,)  # the next step's alignment
        logits = self._logits(self._combine(features))  # (N, V_t)
        return (
            ops.cast(logits, "float32"),
            next_state,
            ops.cast(weights, "float32"),
        )

    def _attend(self, query, state, memory):
        """Query `(N, units)` -> context `(N, dv)` and weights `(N, Ts)`;
        `state` is the step's input state (with monotonic attention, its
        last part is the previous alignment)."""
        if self._is_monotonic:
            return self._attention.step(
                query,
                memory["value"],
                state[-1],
                prepared_key=memory["keys"],
                value_mask=memory["source_mask"],
                training=False,
            )
        if self._is_local:
            return self._attention(
                query,
                memory["value"],
                value_mask=memory["source_mask"],
                return_attention_scores=True,
                training=False,
            )
        return self._attention.attend(
            query,
            memory["keys"],
            memory["value"],
            value_mask=memory["source_mask"],
            return_attention_scores=True,
        )


def make_rnn_adapter(model):
    """The decoding adapter of a `build_rnn_translator` model.

    Args:
        model: a `keras.Model` from `build_rnn_translator` (also after a
            `.keras` round trip).

    Returns:
        An `RNNAdapter` (a `DecodingAdapter`).
    """
    return RNNAdapter(model)


def _validate(**arguments):
    for argument in (
        "source_vocabulary_size",
        "target_vocabulary_size",
        "embedding_dim",
        "units",
        "encoder_layers",
    ):
        check_positive_int(argument, arguments[argument])
    check_choice("attention", arguments["attention"], ATTENTIONS)
    check_choice("cell", arguments["cell"], CELL_TYPES)
    check_rate("dropout", arguments["dropout"])


def _rnn(cell, units, dtype, name, return_state=False):
    """A GRU or LSTM layer returning the full sequence `(B, T, units)`."""
    layer = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
    return layer(
        units,
        return_sequences=True,
        return_state=return_state,
        dtype=dtype,
        name=name,
    )


def _bridge(states, units, dtype, name):
    """Final encoder states (one per direction) -> `tanh(W [s_f; s_b])`."""
    if len(states) > 1:
        states = keras.layers.Concatenate(dtype=dtype, name=f"{name}_concat")(
            list(states)
        )
    else:
        states = states[0]
    return keras.layers.Dense(units, activation="tanh", dtype=dtype, name=name)(
        states
    )


def _attention(attention, units, dtype):
    if attention == "additive":
        return AdditiveAttention(units, dtype=dtype, name="attention")
    if attention == "monotonic":
        return MonotonicAttention(units, dtype=dtype, name="attention")
    if attention == "local":
        return LocalAttention(
            window=LOCAL_WINDOW,
            mode="predictive",
            score="general",
            units=units,
            dtype=dtype,
            name="attention",
        )
    return BilinearAttention(score=attention, dtype=dtype, name="attention")


def _maybe_layer(model, name):
    try:
        return model.get_layer(name)
    except ValueError:
        return None
