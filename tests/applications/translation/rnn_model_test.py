"""The RNN translator: shapes, masks, training, decoding adapter, saving."""

import functools

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo_apps.translation.rnn_model import build_rnn_translator
from attention_zoo_apps.translation.rnn_model import make_rnn_adapter
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy

ATTENTIONS = [
    "additive",
    "general",
    "dot",
    "scaled_dot",
    "monotonic",
    "local",
    None,
]
# Monotonic alignments may stop nowhere and local-p's Gaussian is not
# renormalised: their weights sum to at most one, the softmaxes' to one.
SUB_NORMALISED = ("monotonic", "local")
CELLS = ["gru", "lstm"]
VOCAB = 20
START, END = 2, 3
TINY = dict(embedding_dim=8, units=8, dropout=0.0)

# Two rows of different lengths, padded with 0.
SOURCE = np.array([[5, 6, 7, 8, 3, 0], [4, 9, 3, 0, 0, 0]], "int32")
TARGET_IN = np.array([[2, 5, 6, 7, 8], [2, 4, 9, 0, 0]], "int32")


def _tiny(attention="additive", cell="gru", **kwargs):
    return build_rnn_translator(
        VOCAB, VOCAB, attention=attention, cell=cell, **{**TINY, **kwargs}
    )


def _built(attention, cell, bidirectional=True):
    """`_tiny(attention, cell, bidirectional=...)` built once, with the
    seed every test starts with, for all the tests that only read it
    (none trains it, changes its weights or builds it under another
    dtype policy)."""
    return _build_once(attention, cell, bool(bidirectional))


@functools.cache
def _build_once(attention, cell, bidirectional):
    keras.utils.set_random_seed(0)
    return _tiny(attention, cell, bidirectional=bidirectional)


def _inputs(source=SOURCE, target_in=TARGET_IN):
    return {"source": source, "target_in": target_in}


def _copy_task(n=64, length=5, seed=0):
    """Source: random subwords + END; target: the same after START."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(4, VOCAB, size=(n, length)).astype("int32")
    end = np.full((n, 1), END, "int32")
    start = np.full((n, 1), START, "int32")
    source = np.concatenate([tokens, end], axis=1)
    target_in = np.concatenate([start, tokens], axis=1)
    target_out = np.concatenate([tokens, end], axis=1)
    return _inputs(source, target_in), target_out


def _teacher_forced_steps(decoder, source, target_in):
    """Runs the adapter one step per target position, true tokens fed."""
    memory = decoder.encode(source)
    step = decoder.step_fn(memory)
    state = decoder.initial_state(memory)
    logits, weights = [], []
    for index in range(target_in.shape[1]):
        out, state, attention = step(
            ops.convert_to_tensor(target_in[:, index]), state, index
        )
        logits.append(out)
        weights.append(attention)
    return ops.stack(logits, axis=1), ops.stack(weights, axis=1)


def _greedy(step_fn, initial_state, max_length):
    """`attention_zoo.decoding.greedy_search` tokens, or a tiny loop."""
    try:
        from attention_zoo.decoding import greedy_search
    except ImportError:
        greedy_search = None
    if callable(greedy_search):
        return greedy_search(step_fn, initial_state, START, END, max_length)[
            "tokens"
        ]
    batch = ops.shape(keras.tree.flatten(initial_state)[0])[0]

    def body(index, carry):
        previous, state, tokens = carry
        logits, state, _ = step_fn(previous, state, index)
        next_ids = ops.cast(ops.argmax(logits, axis=-1), "int32")
        tokens = ops.slice_update(tokens, (0, index), next_ids[:, None])
        return next_ids, state, tokens

    carry = (
        ops.full((batch,), START, "int32"),
        initial_state,
        ops.zeros((batch, max_length), "int32"),
    )
    return ops.fori_loop(0, max_length, body, carry)[2]


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_builds_every_configuration(attention, cell, bidirectional):
    model = _built(attention, cell, bidirectional)
    logits = model(_inputs())
    assert tuple(logits.shape) == (2, 5, VOCAB)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.all(np.isfinite(to_numpy(logits)))
    names = {layer.name for layer in model.layers}
    expected = {
        "source",
        "target_in",
        "source_embedding",
        "encoder_0",
        "bridge",
        "target_embedding",
        "decoder_rnn",
        "attention_combine",
        "logits",
    }
    if attention is not None:
        expected.add("attention")
    if cell == "lstm":
        expected.add("bridge_cell")
    assert expected <= names
    # Dot scores need a projection only when the encoder is wider.
    needs_memory = bidirectional and attention in ("dot", "scaled_dot")
    assert ("memory" in names) == needs_memory
    assert ("attention" in names) == (attention is not None)


def test_fit_with_xla_lowers_the_loss():
    inputs, target_out = _copy_task(n=32)
    model = _tiny("additive", "gru", units=16)
    model.compile(
        optimizer=keras.optimizers.Adam(0.02),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=True,
    )
    model.optimizer.build(model.trainable_variables)  # fit traces once
    history = model.fit(
        inputs, target_out, batch_size=16, epochs=8, verbose=0
    ).history["loss"]
    assert np.all(np.isfinite(history))
    assert history[-1] < 0.8 * history[0], history


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_appended_padding_changes_no_real_logits(attention):
    model = _tiny(attention, "gru", encoder_layers=2)
    expected = to_numpy(model(_inputs()))
    padded = _inputs(
        np.pad(SOURCE, ((0, 0), (0, 3))), np.pad(TARGET_IN, ((0, 0), (0, 2)))
    )
    actual = to_numpy(model(padded))[:, : TARGET_IN.shape[1]]
    real = TARGET_IN != 0
    np.testing.assert_allclose(actual[real], expected[real], atol=1e-5)
    # Padding in the source really is hidden: a different model input that
    # differs only in a real source token does change the logits.
    changed = SOURCE.copy()
    changed[1, 0] = 10
    other = to_numpy(model(_inputs(changed, TARGET_IN)))
    assert not np.allclose(other[1][real[1]], expected[1][real[1]])


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_adapter_steps_equal_teacher_forced_logits(attention, cell):
    model = _built(attention, cell, bidirectional=cell == "gru")
    expected = to_numpy(model(_inputs()))
    decoder = make_rnn_adapter(model)
    real = TARGET_IN != 0

    logits, weights = _teacher_forced_steps(decoder, SOURCE, TARGET_IN)
    logits, weights = to_numpy(logits), to_numpy(weights)
    assert logits.dtype == np.float32 and weights.dtype == np.float32
    np.testing.assert_allclose(logits[real], expected[real], atol=1e-5)
    assert weights.shape == (2, 5, SOURCE.shape[1])
    # Padded source positions get no attention; real ones sum to one.
    assert np.all(
        weights[np.broadcast_to((SOURCE == 0)[:, None], weights.shape)] == 0
    )
    sums = weights.sum(-1)
    if attention in SUB_NORMALISED:
        assert np.all(sums > 0) and np.all(sums <= 1 + 1e-5), sums
    else:
        np.testing.assert_allclose(
            sums, 0.0 if attention is None else 1.0, atol=1e-5
        )


@pytest.mark.parametrize(
    "attention, cell",
    [
        ("additive", "gru"),
        ("dot", "lstm"),
        ("monotonic", "gru"),
        ("local", "lstm"),
    ],
)
def test_adapter_steps_compile_with_xla(attention, cell):
    model = _built(attention, cell)
    expected = to_numpy(model(_inputs()))
    decoder = make_rnn_adapter(model)
    compiled = jit(lambda s: _teacher_forced_steps(decoder, s, TARGET_IN)[0])
    logits = to_numpy(compiled(SOURCE))
    real = TARGET_IN != 0
    np.testing.assert_allclose(logits[real], expected[real], atol=1e-5)


@pytest.mark.parametrize(
    "attention, cell",
    [("additive", "lstm"), ("monotonic", "gru"), ("local", "lstm")],
)
def test_compiled_greedy_decode_follows_the_model(attention, cell):
    model = _built(attention, cell)
    decoder = make_rnn_adapter(model)
    max_length = 6

    def decode(source):
        memory = decoder.encode(source)
        return _greedy(
            decoder.step_fn(memory), decoder.initial_state(memory), max_length
        )

    tokens = to_numpy(jit(decode)(SOURCE))
    assert tokens.shape == (2, max_length) and tokens.dtype == np.int32
    # Each generated token is the teacher-forced argmax after its prefix.
    target_in = np.concatenate(
        [np.full((2, 1), START, "int32"), tokens[:, :-1]], axis=1
    )
    argmax = to_numpy(model(_inputs(SOURCE, target_in))).argmax(-1)
    for row in range(2):
        # Up to END, or up to a PAD the untrained model may pick (the
        # teacher-forced model would mask a PAD fed back as input).
        stops = np.flatnonzero((tokens[row] == END) | (tokens[row] == 0))
        length = stops[0] + 1 if len(stops) else max_length
        np.testing.assert_array_equal(
            tokens[row, :length], argmax[row, :length]
        )


@pytest.mark.parametrize(
    "attention, cell",
    [
        ("general", "lstm"),
        (None, "gru"),
        ("monotonic", "lstm"),
        ("local", "gru"),
    ],
)
def test_keras_round_trip_and_adapter_of_loaded_model(
    attention, cell, tmp_path
):
    model = _built(attention, cell)
    loaded = assert_model_round_trip(model, _inputs(), tmp_path)
    expected = to_numpy(model(_inputs()))
    logits, _ = _teacher_forced_steps(
        make_rnn_adapter(loaded), SOURCE, TARGET_IN
    )
    real = TARGET_IN != 0
    np.testing.assert_allclose(
        to_numpy(logits)[real], expected[real], atol=1e-5
    )


@pytest.mark.parametrize("attention", ["additive", "dot", "monotonic", "local"])
def test_mixed_bfloat16_gives_float32_logits_and_finite_loss(attention):
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = _tiny(attention, "lstm")
    inputs, target_out = _copy_task(n=4)
    logits = model(inputs)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    assert np.isfinite(to_numpy(loss(target_out, logits)))
    for weight in model.weights:
        assert weight.dtype == "float32", weight.path
    # The adapter keeps float32 logits and stays close to the model.
    logits_steps, _ = _teacher_forced_steps(
        make_rnn_adapter(model), inputs["source"], inputs["target_in"]
    )
    assert keras.backend.standardize_dtype(logits_steps.dtype) == "float32"
    np.testing.assert_allclose(
        to_numpy(logits_steps), to_numpy(logits), atol=5e-2
    )


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"attention": "multiplicative"}, "attention"),
        ({"cell": "rnn"}, "cell"),
        ({"units": 0}, "units"),
        ({"embedding_dim": -1}, "embedding_dim"),
        ({"encoder_layers": 0}, "encoder_layers"),
        ({"source_vocabulary_size": 0}, "source_vocabulary_size"),
        ({"target_vocabulary_size": 1.5}, "target_vocabulary_size"),
        ({"dropout": 1.0}, "dropout"),
    ],
)
def test_bad_arguments_raise(kwargs, argument):
    arguments = {
        "source_vocabulary_size": VOCAB,
        "target_vocabulary_size": VOCAB,
    }
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=argument):
        build_rnn_translator(**arguments)


# With monotonic attention the scores match only if beam search reorders
# the alignment in the decoder state with its beam.
@pytest.mark.parametrize("attention", ["general", "monotonic", "local"])
def test_compiled_beam_search_scores_match_the_model(attention):
    decoding = pytest.importorskip("attention_zoo.decoding")
    beam_search, tile_beams = decoding.beam_search, decoding.tile_beams
    model = _tiny(attention, "gru")
    # Never pick PAD: the teacher-forced model would mask it as input.
    logits_layer = model.get_layer("logits")
    bias = to_numpy(logits_layer.bias)
    bias[0] = -1e4
    logits_layer.bias.assign(bias)
    decoder = make_rnn_adapter(model)
    beam_size, max_length = 3, 5

    def decode(source):
        memory = decoder.encode(source)
        return beam_search(
            decoder.step_fn(tile_beams(memory, beam_size)),
            decoder.initial_state(memory),
            START,
            END,
            max_length,
            beam_size=beam_size,
            length_penalty=0.0,
        )

    result = to_numpy(jit(decode)(SOURCE))
    tokens, lengths = result["tokens"], result["lengths"]
    assert tokens.shape == (2, max_length)
    assert result["attention"].shape == (2, max_length, SOURCE.shape[1])
    # Independent score: the teacher-forced model's log-probabilities.
    target_in = np.concatenate(
        [np.full((2, 1), START, "int32"), tokens[:, :-1]], axis=1
    )
    logits = to_numpy(model(_inputs(SOURCE, target_in))).astype("float64")
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    for row in range(2):
        steps = np.arange(lengths[row])
        expected = log_probs[row, steps, tokens[row, steps]].sum()
        np.testing.assert_allclose(result["scores"][row], expected, atol=1e-4)
        sums = result["attention"][row].sum(-1)
        if attention in SUB_NORMALISED:
            assert np.all(sums[: lengths[row]] > 0)
            assert np.all(sums[: lengths[row]] <= 1 + 1e-5)
        else:
            np.testing.assert_allclose(sums[: lengths[row]], 1.0, atol=1e-5)
        np.testing.assert_array_equal(sums[lengths[row] :], 0.0)


def test_monotonic_decoder_state_carries_the_alignment():
    model = _built("monotonic", "lstm")
    decoder = make_rnn_adapter(model)
    memory = decoder.encode(SOURCE)
    state = decoder.initial_state(memory)
    assert len(state) == 3  # (h, c, previous alignment)
    first = np.zeros(SOURCE.shape, "float32")
    first[:, 0] = 1.0  # one-hot at the first source position
    np.testing.assert_array_equal(to_numpy(state[-1]), first)
    step = decoder.step_fn(memory)
    _, state, weights = step(ops.convert_to_tensor(TARGET_IN[:, 0]), state, 0)
    np.testing.assert_array_equal(to_numpy(state[-1]), to_numpy(weights))
    # The alignment is the state: another previous alignment changes the
    # step's attention and logits.
    moved = np.zeros(SOURCE.shape, "float32")
    moved[:, 2] = 1.0
    tokens = ops.convert_to_tensor(TARGET_IN[:, 1])
    logits, _, weights = step(tokens, state, 1)
    other_logits, _, other = step(tokens, (*state[:2], moved), 1)
    assert np.all(to_numpy(other)[:, :2] == 0)  # never moves backwards
    assert not np.allclose(to_numpy(other), to_numpy(weights))
    assert not np.allclose(to_numpy(other_logits), to_numpy(logits))
