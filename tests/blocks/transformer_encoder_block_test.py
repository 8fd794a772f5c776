import keras
import numpy as np
import pytest

from attention_zoo.blocks import TransformerEncoderBlock
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

MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)


def np_encoder_block(x, mask, block):
    h = np_layer_norm(x, block._self_attention_norm)
    pair = mask[:, None, :] & np.ones_like(mask)[:, :, None]
    pair = pair & np_window(x.shape[1], block)
    attended, _ = np_multi_head(h, h, block._self_attention, pair)
    x = x + attended * mask[..., None]
    h = np_layer_norm(x, block._feed_forward_norm)
    return x + np_feed_forward(h, block)


def make_block(**kwargs):
    arguments = dict(num_heads=2, key_dim=4, feed_forward_dim=16)
    arguments.update(kwargs)
    return TransformerEncoderBlock(**arguments)


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_layer_harness(dropout):
    run_layer_test(
        TransformerEncoderBlock,
        dict(num_heads=2, key_dim=4, feed_forward_dim=16, dropout=dropout),
        np.random.randn(2, 5, 8).astype("float32"),
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=16,
    )


@pytest.mark.parametrize("options", OPTIONS)
def test_layer_harness_with_options(options):
    gate_weights = 2 if options.get("use_gate") else 0
    run_layer_test(
        TransformerEncoderBlock,
        {**dict(num_heads=2, key_dim=4, feed_forward_dim=16), **options},
        np.random.randn(2, 5, 8).astype("float32"),
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=16 + gate_weights,
    )


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_matches_numpy_reference(options):
    x = np.random.randn(2, 5, 8).astype("float32")
    block = make_block(**options)
    output = to_numpy(block(x, mask=MASK))
    expected = np_encoder_block(x, MASK, block)
    np.testing.assert_allclose(output[MASK], expected[MASK], atol=1e-5)


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_masked_values_do_not_change_output(options):
    x = np.random.randn(2, 5, 8).astype("float32")
    changed = np.where(MASK[..., None], x, 100.0).astype("float32")
    block = make_block(**options)
    a, b = to_numpy(block(x, mask=MASK)), to_numpy(block(changed, mask=MASK))
    np.testing.assert_allclose(a[MASK], b[MASK], atol=1e-5)


def test_implicit_mask_equals_explicit_mask():
    ids = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]], "int32")
    embedding = keras.layers.Embedding(6, 8, mask_zero=True)
    block = make_block()
    inputs = keras.Input((None,), dtype="int32")
    outputs = block(embedding(inputs))
    model = keras.Model(inputs, outputs)
    implicit = to_numpy(model(ids))
    explicit = to_numpy(block(embedding(ids), mask=ids != 0))
    np.testing.assert_allclose(implicit, explicit, atol=1e-6)
    assert outputs._keras_mask is not None


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_fully_masked_row_is_finite(options):
    x = np.random.randn(2, 5, 8).astype("float32")
    mask = MASK.copy()
    mask[0] = False
    output = make_block(**options)(x, mask=mask)
    assert np.all(np.isfinite(to_numpy(output)))


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_mixed_precision_large_inputs(options):
    x = 30 * np.random.randn(2, 5, 8).astype("float32")
    block = make_block(**options)
    reference = to_numpy(block(x, mask=MASK))
    mixed = make_block(**options, dtype="mixed_bfloat16")
    mixed.build(x.shape)
    mixed.set_weights(block.get_weights())
    output = to_numpy(keras.ops.cast(mixed(x, mask=MASK), "float32"))
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, reference, atol=0.5, rtol=0.05)


@pytest.mark.parametrize("options", DEFAULT_AND_OPTIONS)
def test_model_round_trip(tmp_path, options):
    inputs = keras.Input((None, 8))
    model = keras.Model(inputs, make_block(dropout=0.1, **options)(inputs))
    x = np.random.randn(2, 5, 8).astype("float32")
    assert_model_round_trip(model, x, tmp_path)


@pytest.mark.parametrize("options", OPTIONS)
def test_xla_equals_eager_with_mask(options):
    x = np.random.randn(2, 5, 8).astype("float32")
    block = make_block(**options)
    eager = to_numpy(block(x, mask=MASK))
    compiled = to_numpy(jit(lambda x, mask: block(x, mask=mask))(x, MASK))
    np.testing.assert_allclose(compiled, eager, atol=1e-5)


def test_default_options_leave_the_block_unchanged():
    x = np.random.randn(2, 5, 8).astype("float32")
    blocks = []
    # K = H is plain multi-head attention, too.
    for options in (dict(), OPTION_DEFAULTS, dict(num_key_value_heads=2)):
        keras.utils.set_random_seed(3)
        blocks.append(make_block(**options, name="block"))
        blocks[-1].build(x.shape)
    plain = blocks[0]
    expected = to_numpy(plain(x, mask=MASK))
    for block in blocks[1:]:
        assert [w.path for w in block.weights] == [
            w.path for w in plain.weights
        ]
        for a, b in zip(block.weights, plain.weights):
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
        np.testing.assert_array_equal(to_numpy(block(x, mask=MASK)), expected)


@pytest.mark.parametrize("heads, key_value_heads", [(2, 1), (4, 2), (4, 1)])
def test_grouped_heads_equal_repeated_heads(heads, key_value_heads):
    x = np.random.randn(2, 5, 8).astype("float32")
    grouped = make_block(
        num_heads=heads, key_dim=2, num_key_value_heads=key_value_heads
    )
    plain = make_block(num_heads=heads, key_dim=2)
    grouped.build(x.shape)
    plain.build(x.shape)
    kernel = grouped._self_attention._key_kernel
    assert tuple(kernel.shape) == (8, key_value_heads, 2)
    repeat_key_value_heads(grouped, plain)
    np.testing.assert_allclose(
        to_numpy(grouped(x, mask=MASK)),
        to_numpy(plain(x, mask=MASK)),
        atol=1e-5,
    )


def test_steps_outside_the_window_do_not_change_an_output():
    # Window 2: step i sees steps i - 1, i, i + 1 only.
    x = np.random.randn(2, 5, 8).astype("float32")
    changed = x.copy()
    changed[:, 0] = 50.0
    block = make_block(sliding_window=2)
    a, b = to_numpy(block(x)), to_numpy(block(changed))
    np.testing.assert_allclose(a[:, 2:], b[:, 2:], atol=1e-6)
    assert not np.allclose(a[:, :2], b[:, :2])
    # A window as long as the sequence hides nothing.
    wide = make_block(sliding_window=5)
    wide.build(x.shape)
    plain = make_block()
    plain.build(x.shape)
    plain.set_weights(wide.get_weights())
    np.testing.assert_allclose(
        to_numpy(wide(x, mask=MASK)), to_numpy(plain(x, mask=MASK)), atol=1e-6
    )


@pytest.mark.parametrize("options", OPTIONS)
def test_options_round_trip_through_config(options):
    config = make_block(**options).get_config()
    for name, default in OPTION_DEFAULTS.items():
        assert config[name] == options.get(name, default)
    assert TransformerEncoderBlock.from_config(config).get_config() == config


def test_config_saved_before_the_options_loads_with_defaults():
    config = make_block().get_config()
    for name in OPTION_DEFAULTS:
        del config[name]
    block = TransformerEncoderBlock.from_config(config)
    for name, default in OPTION_DEFAULTS.items():
        assert getattr(block, name) is default


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(num_heads=0), "num_heads"),
        (dict(key_dim=2.5), "key_dim"),
        (dict(feed_forward_dim=-1), "feed_forward_dim"),
        (dict(dropout=1.0), "dropout"),
        (dict(num_key_value_heads=0), "num_key_value_heads"),
        (dict(num_key_value_heads=3), "num_key_value_heads"),
        (dict(sliding_window=1.5), "sliding_window"),
        (dict(sliding_window=0), "sliding_window"),
        (dict(use_gate="yes"), "use_gate"),
    ],
)
def test_invalid_arguments_raise(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        make_block(**kwargs)
