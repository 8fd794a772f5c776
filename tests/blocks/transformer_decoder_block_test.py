import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.blocks import TransformerDecoderBlock
from tests.support.layer_checks import assert_model_round_trip
from tests.support.layer_checks import jit
from tests.support.layer_checks import run_layer_test
from tests.support.layer_checks import to_numpy
from tests.support.transformer_reference import DEFAULT_AND_OPTIONS
from tests.support.transformer_reference import OPTION_DEFAULTS
from tests.support.transformer_reference import OPTIONS
from tests.support.transformer_reference import np_feed_forward
from tests.support.transformer_reference import np_layer_norm
from tests.support.transformer_reference import np_multi_head
from tests.support.transformer_reference import np_window
from tests.support.transformer_reference import repeat_key_value_heads

B, TQ, TS, D = 2, 4, 5, 8
ENCODER_MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)


def make_block(**kwargs):
    arguments = dict(num_heads=2, key_dim=4, feed_forward_dim=16)
    arguments.update(kwargs)
    return TransformerDecoderBlock(**arguments)


def make_inputs():
    y = np.random.randn(B, TQ, D).astype("float32")
    memory = np.random.randn(B, TS, 6).astype("float32")
    return y, memory


def np_decoder_block(y, memory, encoder_mask, block):
    causal = np_window(TQ, block, causal=True)[None].repeat(B, 0)
    h = np_layer_norm(y, block._self_attention_norm)
    y = y + np_multi_head(h, h, block._self_attention, causal)[0]
    h = np_layer_norm(y, block._cross_attention_norm)
    cross = encoder_mask[:, None, :].repeat(TQ, 1)
    attended, weights = np_multi_head(h, memory, block._cross_attention, cross)
    y = y + attended
    h = np_layer_norm(y, block._feed_forward_norm)
    return y + np_feed_forward(h, block), weights


def decode_step_by_step(block, y, memory, encoder_mask, compiled=False):
    """Feeds `y` one step at a time through the caches."""

    def step(y_t, cache, cross_cache, index):
        return block(
            y_t,
            memory,
            encoder_mask=encoder_mask,
            self_attention_cache=cache,
            cross_attention_cache=cross_cache,
            cache_update_index=index,
            return_attention_scores=True,
        )

    step = jit(step) if compiled else step
    cache = block.get_initial_cache(B, TQ)
    cross_cache = block.compute_cross_attention_cache(memory)
    outputs, weights = [], []
    for t in range(TQ):
        out, w, cache = step(y[:, t : t + 1], cache, cross_cache, np.int32(t))
        outputs.append(to_numpy(out))
        weights.append(to_numpy(w))
    return np.concatenate(outputs, 1), np.concatenate(weights, 2)


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_layer_harness(dropout):
    y, memory = make_inputs()
    run_layer_test(
        TransformerDecoderBlock,
        dict(num_heads=2, key_dim=4, feed_forward_dim=16, dropout=dropout),
        {"inputs": y, "encoder_outputs": memory},
        expected_output_shape=(B, TQ, D),
        expected_num_trainable_weights=26,
    )


@pytest.mark.parametrize("options", OPTIONS)
def test_layer_harness_with_options(options):
    y, memory = make_inputs()
    gate_weights = 4 if options.get("use_gate") else 0
    run_layer_test(
        TransformerDecoderBlock,
        {**dict(num_heads=2, key_dim=4, feed_forward_dim=16), **options},
        {"inputs": y, "encoder_outputs": memory},
        expected_output_shape=(B, TQ, D),
        expected_num_trainable_weights=26 + gate_weights,
    )


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_matches_numpy_reference(options):
    y, memory = make_inputs()
    block = make_block(**options)
    output, weights = block(
        y, memory, encoder_mask=ENCODER_MASK, return_attention_scores=True
    )
    expected, expected_weights = np_decoder_block(
        y, memory, ENCODER_MASK, block
    )
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-5)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_cached_decoding_equals_full_causal_pass(options, compiled):
    y, memory = make_inputs()
    block = make_block(**options)
    full, full_weights = block(
        y, memory, encoder_mask=ENCODER_MASK, return_attention_scores=True
    )
    steps, step_weights = decode_step_by_step(
        block, y, memory, ENCODER_MASK, compiled
    )
    np.testing.assert_allclose(steps, to_numpy(full), atol=1e-5)
    np.testing.assert_allclose(step_weights, to_numpy(full_weights), 1e-5)


def test_future_decoder_inputs_do_not_change_earlier_outputs():
    y, memory = make_inputs()
    block = make_block()
    changed = y.copy()
    changed[:, 2:] = 50.0
    a, b = to_numpy(block(y, memory)), to_numpy(block(changed, memory))
    np.testing.assert_allclose(a[:, :2], b[:, :2], atol=1e-5)
    assert not np.allclose(a[:, 2:], b[:, 2:])


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_padded_source_values_do_not_change_output(options):
    y, memory = make_inputs()
    changed = np.where(ENCODER_MASK[..., None], memory, 100.0)
    block = make_block(**options)
    a = block(y, memory, encoder_mask=ENCODER_MASK)
    b = block(y, changed.astype("float32"), encoder_mask=ENCODER_MASK)
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5)


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_padded_decoder_steps_do_not_change_real_steps(options):
    y, memory = make_inputs()
    decoder_mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)
    changed = np.where(decoder_mask[..., None], y, -30.0).astype("float32")
    block = make_block(**options)
    a = to_numpy(block(y, memory, decoder_mask=decoder_mask))
    b = to_numpy(block(changed, memory, decoder_mask=decoder_mask))
    np.testing.assert_allclose(a[decoder_mask], b[decoder_mask], atol=1e-5)


def test_cross_attention_weights_hide_padded_source():
    y, memory = make_inputs()
    _, weights = make_block()(
        y, memory, encoder_mask=ENCODER_MASK, return_attention_scores=True
    )
    weights = to_numpy(weights)
    assert weights.shape == (B, 2, TQ, TS)
    assert np.all(weights[0, :, :, 3:] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_symbolic_call_with_caches_and_weights():
    block = make_block()
    y = keras.Input((1, D))
    memory = keras.Input((None, 6))
    cache = keras.Input((2, 7, 2, 4))
    cross_cache = keras.Input((2, 5, 2, 4))
    out, weights, new_cache = block(
        y,
        memory,
        self_attention_cache=cache,
        cross_attention_cache=cross_cache,
        cache_update_index=0,
        return_attention_scores=True,
    )
    assert out.shape == (None, 1, D)
    assert weights.shape == (None, 2, 1, 5)
    assert new_cache.shape == (None, 2, 7, 2, 4)


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_fully_masked_source_is_finite(options):
    y, memory = make_inputs()
    mask = np.zeros((B, TS), bool)
    output = make_block(**options)(y, memory, encoder_mask=mask)
    assert np.all(np.isfinite(to_numpy(output)))


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_mixed_precision_cached_decoding(options):
    y, memory = 20 * make_inputs()[0], make_inputs()[1]
    block = make_block(**options)
    reference = to_numpy(block(y, memory, encoder_mask=ENCODER_MASK))
    mixed = make_block(**options, dtype="mixed_bfloat16")
    mixed.build(y.shape, memory.shape)
    mixed.set_weights(block.get_weights())
    assert mixed.get_initial_cache(B, TQ).dtype == "bfloat16"
    steps, _ = decode_step_by_step(mixed, y, memory, ENCODER_MASK)
    steps = steps.astype("float32")
    assert np.all(np.isfinite(steps))
    np.testing.assert_allclose(steps, reference, atol=0.5, rtol=0.05)


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_model_round_trip(tmp_path, options):
    y = keras.Input((None, D))
    memory = keras.Input((None, 6))
    block = make_block(dropout=0.1, **options)
    model = keras.Model([y, memory], block(y, memory))
    assert_model_round_trip(model, list(make_inputs()), tmp_path)


def test_cache_needs_update_index():
    y, memory = make_inputs()
    block = make_block()
    block(y, memory)
    cache = block.get_initial_cache(B, TQ)
    with pytest.raises(ValueError, match="cache_update_index"):
        block(y[:, :1], memory, self_attention_cache=cache)
    with pytest.raises(ValueError, match="self_attention_cache"):
        block(y[:, :1], memory, cache_update_index=ops.convert_to_tensor(0))


@pytest.mark.parametrize("key_value_heads", [1, 2])
def test_caches_hold_key_value_heads(key_value_heads):
    y, memory = make_inputs()
    block = make_block(
        num_heads=4, key_dim=2, num_key_value_heads=key_value_heads
    )
    block(y, memory)
    cache = block.get_initial_cache(B, 7)
    cross_cache = block.compute_cross_attention_cache(memory)
    assert tuple(cache.shape) == (B, 2, 7, key_value_heads, 2)
    assert tuple(cross_cache.shape) == (B, 2, TS, key_value_heads, 2)
    _, weights, new_cache = block(
        y[:, :1],
        memory,
        self_attention_cache=cache,
        cross_attention_cache=cross_cache,
        cache_update_index=0,
        return_attention_scores=True,
    )
    assert tuple(new_cache.shape) == tuple(cache.shape)
    assert tuple(weights.shape) == (B, 4, 1, TS)  # all H query heads
    # Symbolic, too.
    out, new_cache = block(
        keras.Input((1, D)),
        keras.Input((None, 6)),
        self_attention_cache=keras.Input((2, 7, key_value_heads, 2)),
        cache_update_index=0,
    )
    assert new_cache.shape == (None, 2, 7, key_value_heads, 2)


@pytest.mark.parametrize("heads, key_value_heads", [(2, 1), (4, 2)])
def test_grouped_heads_equal_repeated_heads(heads, key_value_heads):
    y, memory = make_inputs()
    options = dict(num_heads=heads, key_dim=2)
    grouped = make_block(**options, num_key_value_heads=key_value_heads)
    plain = make_block(**options)
    grouped.build(y.shape, memory.shape)
    plain.build(y.shape, memory.shape)
    repeat_key_value_heads(grouped, plain)
    a, a_weights = grouped(
        y, memory, encoder_mask=ENCODER_MASK, return_attention_scores=True
    )
    b, b_weights = plain(
        y, memory, encoder_mask=ENCODER_MASK, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5)
    np.testing.assert_allclose(to_numpy(a_weights), to_numpy(b_weights), 1e-5)


@pytest.mark.parametrize("cached", [False, True])
def test_steps_outside_the_window_do_not_change_an_output(cached):
    # Window 2: step t sees steps t - 1 and t; the source is not windowed.
    y, memory = make_inputs()
    changed = y.copy()
    changed[:, 0] = 50.0
    block = make_block(sliding_window=2)
    block.build(y.shape, memory.shape)
    if cached:
        a = decode_step_by_step(block, y, memory, ENCODER_MASK)[0]
        b = decode_step_by_step(block, changed, memory, ENCODER_MASK)[0]
    else:
        a = to_numpy(block(y, memory, encoder_mask=ENCODER_MASK))
        b = to_numpy(block(changed, memory, encoder_mask=ENCODER_MASK))
    np.testing.assert_allclose(a[:, 2:], b[:, 2:], atol=1e-6)
    assert not np.allclose(a[:, :2], b[:, :2])
    assert block._cross_attention.sliding_window is None


def test_gate_applies_to_both_attentions():
    block = make_block(use_gate=True)
    block.build((B, TQ, D), (B, TS, 6))
    for attention in (block._self_attention, block._cross_attention):
        assert attention.use_gate
        assert tuple(attention._gate_kernel.shape) == (D, 2, 4)


def test_default_options_leave_the_block_unchanged():
    y, memory = make_inputs()
    blocks = []
    # K = H is plain multi-head attention, too.
    for options in (dict(), OPTION_DEFAULTS, dict(num_key_value_heads=2)):
        keras.utils.set_random_seed(3)
        blocks.append(make_block(**options, name="block"))
        blocks[-1].build(y.shape, memory.shape)
    plain = blocks[0]
    expected = to_numpy(plain(y, memory, encoder_mask=ENCODER_MASK))
    expected_steps = decode_step_by_step(plain, y, memory, ENCODER_MASK)
    for block in blocks[1:]:
        assert [w.path for w in block.weights] == [
            w.path for w in plain.weights
        ]
        for a, b in zip(block.weights, plain.weights):
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
        output = block(y, memory, encoder_mask=ENCODER_MASK)
        np.testing.assert_array_equal(to_numpy(output), expected)
        steps = decode_step_by_step(block, y, memory, ENCODER_MASK)
        np.testing.assert_array_equal(steps[0], expected_steps[0])
        np.testing.assert_array_equal(steps[1], expected_steps[1])


@pytest.mark.parametrize("options", OPTIONS)
def test_options_round_trip_through_config(options):
    config = make_block(**options).get_config()
    for name, default in OPTION_DEFAULTS.items():
        assert config[name] == options.get(name, default)
    assert TransformerDecoderBlock.from_config(config).get_config() == config


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(num_heads=-1), "num_heads"),
        (dict(key_dim=0), "key_dim"),
        (dict(feed_forward_dim=None), "feed_forward_dim"),
        (dict(dropout=-0.1), "dropout"),
        (dict(num_key_value_heads=-1), "num_key_value_heads"),
        (dict(num_heads=4, num_key_value_heads=3), "num_key_value_heads"),
        (dict(sliding_window=True), "sliding_window"),
        (dict(use_gate=1), "use_gate"),
    ],
)
def test_invalid_arguments_raise(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        make_block(**kwargs)
