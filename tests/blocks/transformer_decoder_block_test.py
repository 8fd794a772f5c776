import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.blocks import TransformerDecoderBlock
from tests.blocks.transformer_encoder_block_test import np_feed_forward
from tests.blocks.transformer_encoder_block_test import np_layer_norm
from tests.blocks.transformer_encoder_block_test import np_multi_head
from tests.test_case import assert_model_round_trip
from tests.test_case import jit
from tests.test_case import run_layer_test
from tests.test_case import to_numpy

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
    causal = np.tril(np.ones((TQ, TQ), bool))[None].repeat(B, 0)
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


def test_matches_numpy_reference():
    y, memory = make_inputs()
    block = make_block()
    output, weights = block(
        y, memory, encoder_mask=ENCODER_MASK, return_attention_scores=True
    )
    expected, expected_weights = np_decoder_block(
        y, memory, ENCODER_MASK, block
    )
    np.testing.assert_allclose(to_numpy(output), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-5)


@pytest.mark.parametrize("compiled", [False, True])
def test_cached_decoding_equals_full_causal_pass(compiled):
    y, memory = make_inputs()
    block = make_block()
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


def test_padded_source_values_do_not_change_output():
    y, memory = make_inputs()
    changed = np.where(ENCODER_MASK[..., None], memory, 100.0)
    block = make_block()
    a = block(y, memory, encoder_mask=ENCODER_MASK)
    b = block(y, changed.astype("float32"), encoder_mask=ENCODER_MASK)
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5)


def test_padded_decoder_steps_do_not_change_real_steps():
    y, memory = make_inputs()
    decoder_mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)
    changed = np.where(decoder_mask[..., None], y, -30.0).astype("float32")
    block = make_block()
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


def test_fully_masked_source_is_finite():
    y, memory = make_inputs()
    mask = np.zeros((B, TS), bool)
    output = make_block()(y, memory, encoder_mask=mask)
    assert np.all(np.isfinite(to_numpy(output)))


def test_mixed_precision_cached_decoding():
    y, memory = 20 * make_inputs()[0], make_inputs()[1]
    block = make_block()
    reference = to_numpy(block(y, memory, encoder_mask=ENCODER_MASK))
    mixed = make_block(dtype="mixed_bfloat16")
    mixed.build(y.shape, memory.shape)
    mixed.set_weights(block.get_weights())
    assert mixed.get_initial_cache(B, TQ).dtype == "bfloat16"
    steps, _ = decode_step_by_step(mixed, y, memory, ENCODER_MASK)
    steps = steps.astype("float32")
    assert np.all(np.isfinite(steps))
    np.testing.assert_allclose(steps, reference, atol=0.5, rtol=0.05)


def test_model_round_trip(tmp_path):
    y = keras.Input((None, D))
    memory = keras.Input((None, 6))
    block = make_block(dropout=0.1)
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


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(num_heads=-1), "num_heads"),
        (dict(key_dim=0), "key_dim"),
        (dict(feed_forward_dim=None), "feed_forward_dim"),
        (dict(dropout=-0.1), "dropout"),
    ],
)
def test_invalid_arguments_raise(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        make_block(**kwargs)
