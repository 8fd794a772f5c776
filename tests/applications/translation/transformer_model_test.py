"""The Transformer translator: shapes, masks, training, decoding, saving."""

import functools
import inspect

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.decoding import greedy_search
from attention_zoo_apps.translation.transformer_model import (
    build_transformer_translator,
)
from attention_zoo_apps.translation.transformer_model import (
    make_transformer_adapter,
)
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import to_numpy

VOCAB = 20
START, END = 2, 3
TINY = dict(model_dim=16, num_heads=2, feed_forward_dim=32, dropout=0.0)
SMALL = dict(TINY, num_layers=1)
# MultiHead's options, passed to every block.
OPTIONS = dict(num_key_value_heads=1, sliding_window=3, use_gate=True)

# Two rows of different lengths, padded with 0.
SOURCE = np.array([[5, 6, 7, 8, 3, 0], [4, 9, 3, 0, 0, 0]], "int32")
TARGET_IN = np.array([[2, 5, 6, 7, 8], [2, 4, 9, 0, 0]], "int32")
TARGET_MASK = TARGET_IN != 0


def _tiny(**kwargs):
    return build_transformer_translator(VOCAB, VOCAB, **{**SMALL, **kwargs})


_DEFAULTS = {
    name: parameter.default
    for name, parameter in inspect.signature(
        build_transformer_translator
    ).parameters.items()
}


def _built(**kwargs):
    """`_tiny(**kwargs)` built once, with the seed every test starts
    with, for all the tests that only read it (none trains it, changes
    its weights or builds it under another dtype policy)."""
    options = {**SMALL, **kwargs}
    return _build_once(
        tuple(
            sorted(
                (name, value)
                for name, value in options.items()
                if name not in _DEFAULTS or _DEFAULTS[name] != value
            )
        )
    )


@functools.cache
def _build_once(options):
    keras.utils.set_random_seed(0)
    return build_transformer_translator(VOCAB, VOCAB, **dict(options))


def _inputs(source=SOURCE, target_in=TARGET_IN):
    return {"source": source, "target_in": target_in}


def _copy_task(n=64, length=5):
    """Source: random subwords + END; target: the same after START."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(4, VOCAB, size=(n, length)).astype("int32")
    end = np.full((n, 1), END, "int32")
    start = np.full((n, 1), START, "int32")
    source = np.concatenate([tokens, end], 1)
    target_in = np.concatenate([start, tokens], 1)
    target_out = np.concatenate([tokens, end], 1)
    return _inputs(source, target_in), target_out


def _decode(model, source, target_in, compiled=False, tied_length=8):
    """Teacher-forced logits through the adapter, one step at a time."""
    decoder = make_transformer_adapter(model, max_decode_length=tied_length)

    def run(source, target_in):
        memory = decoder.encode(source)
        state = decoder.initial_state(memory)
        step_fn = decoder.step_fn(memory)
        logits, attention = [], []
        for t in range(target_in.shape[1]):
            step_logits, state, weights = step_fn(
                target_in[:, t], state, ops.convert_to_tensor(t, "int32")
            )
            logits.append(step_logits)
            attention.append(weights)
        return ops.stack(logits, 1), ops.stack(attention, 1)

    run = jit(run) if compiled else run
    return to_numpy(run(source, target_in))


@pytest.mark.parametrize("tie_embeddings", [False, True])
def test_output_shape_and_dtype(tie_embeddings):
    model = _built(tie_embeddings=tie_embeddings)
    logits = model(_inputs())
    assert tuple(logits.shape) == (2, 5, VOCAB)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert model.input["source"].name == "source"
    for name in ("source_embedding", "encoder_0", "decoder_0", "logits"):
        assert model.get_layer(name) is not None
    assert model.get_layer("encoder_norm") is not None
    assert model.get_layer("decoder_norm") is not None


def test_trains_and_loss_falls():
    model = _tiny()
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=True,
    )
    model.optimizer.build(model.trainable_variables)  # fit traces once
    inputs, target_out = _copy_task()
    history = model.fit(
        inputs, target_out, batch_size=16, epochs=6, verbose=0
    ).history["loss"]
    assert np.all(np.isfinite(history))
    assert history[-1] < 0.8 * history[0]


def test_padding_does_not_change_real_positions():
    model = _built()
    expected = to_numpy(model(_inputs()))
    # More padding on both inputs, and garbage-free padding stays 0.
    source = np.pad(SOURCE, ((0, 0), (0, 3)))
    target_in = np.pad(TARGET_IN, ((0, 0), (0, 2)))
    padded = to_numpy(model(_inputs(source, target_in)))
    np.testing.assert_allclose(
        padded[:, :5][TARGET_MASK], expected[TARGET_MASK], atol=1e-5
    )


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(tie_embeddings=True, positions="learned", num_layers=2),
        dict(OPTIONS, num_layers=2),
        dict(num_layers=2, decoder_layers=1),  # a shallow decoder
    ],
)
def test_adapter_matches_teacher_forcing(kwargs, compiled):
    model = _built(**kwargs)
    expected = to_numpy(model(_inputs()))
    logits, attention = _decode(model, SOURCE, TARGET_IN, compiled)
    np.testing.assert_allclose(
        logits[TARGET_MASK], expected[TARGET_MASK], atol=1e-4
    )
    assert attention.shape == (2, 5, SOURCE.shape[1])
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)
    assert np.all(attention[SOURCE[:, None, :].repeat(5, 1) == 0] == 0)


def test_adapter_memory_and_state_are_batch_leading():
    model = _built(num_layers=2)
    decoder = make_transformer_adapter(model, max_decode_length=7)
    memory = decoder.encode(SOURCE)
    state = decoder.initial_state(memory)
    for tensor in memory["cross_attention_caches"]:
        assert tuple(tensor.shape) == (2, 2, 6, 2, 8)
    for tensor in state["self_attention_caches"]:
        assert tuple(tensor.shape) == (2, 2, 7, 2, 8)


def test_options_reach_every_block_and_shrink_the_caches():
    model = _built(num_layers=2, **OPTIONS)
    for name in ("encoder_0", "encoder_1", "decoder_0", "decoder_1"):
        block = model.get_layer(name)
        for option, value in OPTIONS.items():
            assert getattr(block, option) == value
    decoder = make_transformer_adapter(model, max_decode_length=7)
    memory = decoder.encode(SOURCE)
    state = decoder.initial_state(memory)
    for tensor in memory["cross_attention_caches"]:
        assert tuple(tensor.shape) == (2, 2, 6, 1, 8)
    for tensor in state["self_attention_caches"]:
        assert tuple(tensor.shape) == (2, 2, 7, 1, 8)


def test_default_options_build_the_same_model():
    keras.utils.set_random_seed(5)
    plain = _tiny()
    keras.utils.set_random_seed(5)
    explicit = _tiny(num_key_value_heads=None, sliding_window=None)
    for a, b in zip(plain.weights, explicit.weights):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    np.testing.assert_array_equal(
        to_numpy(plain(_inputs())), to_numpy(explicit(_inputs()))
    )


def test_tied_embeddings_have_fewer_weights():
    untied, tied = _built(), _built(tie_embeddings=True)
    assert tied.count_params() == untied.count_params() - 16 * VOCAB
    assert type(tied.get_layer("logits")).__name__ == "LogitsBias"


def test_learned_positions_add_position_tables():
    sinusoidal = _tiny(max_length=12)
    learned = _tiny(max_length=12, positions="learned")
    assert learned.count_params() == sinusoidal.count_params() + 2 * 12 * 16
    assert np.all(np.isfinite(to_numpy(learned(_inputs()))))


@pytest.mark.parametrize("kwargs", [dict(), dict(tie_embeddings=True), OPTIONS])
def test_keras_round_trip(tmp_path, kwargs):
    model = _tiny(**kwargs, dropout=0.1)
    loaded = assert_model_round_trip(model, _inputs(), tmp_path)
    logits, _ = _decode(loaded, SOURCE, TARGET_IN)
    expected = to_numpy(model(_inputs()))
    np.testing.assert_allclose(
        logits[TARGET_MASK], expected[TARGET_MASK], atol=1e-4
    )


def test_mixed_bfloat16_gives_float32_logits():
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = _tiny(tie_embeddings=True)
    logits = model(_inputs())
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.all(np.isfinite(to_numpy(logits)))
    step_logits, attention = _decode(model, SOURCE, TARGET_IN[:, :2])
    assert step_logits.dtype == np.float32 and attention.dtype == np.float32
    assert np.all(np.isfinite(step_logits))


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(source_vocabulary_size=0), "source_vocabulary_size"),
        (dict(target_vocabulary_size=2.0), "target_vocabulary_size"),
        (dict(num_layers=0), "num_layers"),
        (dict(decoder_layers=0), "decoder_layers"),
        (dict(model_dim=15), "model_dim"),
        (dict(num_heads=-2), "num_heads"),
        (dict(feed_forward_dim=0), "feed_forward_dim"),
        (dict(dropout=1.5), "dropout"),
        (dict(positions="rotary"), "positions"),
        (dict(max_length=0), "max_length"),
        (dict(tie_embeddings="yes"), "tie_embeddings"),
        (dict(num_key_value_heads=3), "num_key_value_heads"),
        (dict(sliding_window=0), "sliding_window"),
        (dict(use_gate="yes"), "use_gate"),
    ],
)
def test_invalid_arguments_raise(kwargs, argument):
    arguments = dict(
        source_vocabulary_size=VOCAB, target_vocabulary_size=VOCAB, **TINY
    )
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=argument):
        build_transformer_translator(**arguments)


def test_adapter_rejects_bad_arguments():
    model = _tiny(positions="learned", max_length=8)
    with pytest.raises(ValueError, match="max_decode_length"):
        make_transformer_adapter(model, max_decode_length=0)
    with pytest.raises(ValueError, match="max_decode_length"):
        make_transformer_adapter(model, max_decode_length=9)
    inputs = keras.Input((None,), dtype="int32")
    other = keras.Model(inputs, keras.layers.Embedding(4, 2)(inputs))
    with pytest.raises(ValueError, match="model"):
        make_transformer_adapter(other)


def test_greedy_search_agrees_with_teacher_forced_argmax():
    model = _built()
    decoder = make_transformer_adapter(model, max_decode_length=6)

    def search(source):
        memory = decoder.encode(source)
        return greedy_search(
            decoder.step_fn(memory), decoder.initial_state(memory), 2, 3, 6
        )

    tokens = to_numpy(jit(search)(SOURCE)["tokens"])
    target_in = np.concatenate([np.full((2, 1), START), tokens[:, :-1]], 1)
    logits = to_numpy(model(_inputs(target_in=target_in.astype("int32"))))
    # Every generated token is the argmax given the tokens before it.
    for row in range(2):
        for t in range(6):
            np.testing.assert_equal(tokens[row, t], logits[row, t].argmax())
            if tokens[row, t] == END:
                break


def _config_and_model(**changes):
    """A tiny Transformer `TranslationConfig` with `changes`, checked to
    round-trip through JSON, and its model (30 words a side)."""
    from attention_zoo_apps.translation.config import TranslationConfig
    from attention_zoo_apps.translation.model import build_translation_model

    config = TranslationConfig(
        model="transformer",
        model_dim=16,
        num_heads=2,
        feed_forward_dim=32,
        max_length=8,
        **changes,
    )
    assert TranslationConfig.from_json(config.to_json()) == config
    return config, build_translation_model(config, 30, 30)


def test_the_config_carries_the_attention_options_to_the_model():
    import json

    from attention_zoo_apps.translation.config import TranslationConfig

    config, model = _config_and_model(num_layers=1, **OPTIONS)
    for name in ("encoder_0", "decoder_0"):
        for option, value in OPTIONS.items():
            assert getattr(model.get_layer(name), option) == value
    # Configs saved before these options load with the defaults.
    values = json.loads(config.to_json())
    for option in OPTIONS:
        del values[option]
    old = TranslationConfig.from_json(json.dumps(values))
    assert (old.num_key_value_heads, old.sliding_window, old.use_gate) == (
        None,
        None,
        False,
    )
    with pytest.raises(ValueError, match="multiple of `num_key_value_heads`"):
        TranslationConfig(num_heads=4, num_key_value_heads=3)
    with pytest.raises(ValueError, match="sliding_window"):
        TranslationConfig(sliding_window=0)


def test_a_shallow_decoder_has_its_own_block_count():
    from attention_zoo_apps.translation.config import TranslationConfig

    config, model = _config_and_model(num_layers=3, decoder_layers=1)
    names = {layer.name for layer in model.layers}
    assert {"encoder_0", "encoder_1", "encoder_2", "decoder_0"} <= names
    assert "encoder_3" not in names and "decoder_1" not in names
    adapter = make_transformer_adapter(model)
    assert (len(adapter._encoders), len(adapter._decoders)) == (3, 1)
    with pytest.raises(ValueError, match="`decoder_layers` needs"):
        TranslationConfig(decoder_layers=1)
    with pytest.raises(ValueError, match="decoder_layers"):
        config.replace(decoder_layers=0)
