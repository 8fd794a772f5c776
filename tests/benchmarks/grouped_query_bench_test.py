"""The grouped-query benchmark compares like with like, and runs briefly.

With the same weights, the timed candidates give the same outputs; the
measured caches shrink with the key/value heads; the compiled decoding
loop equals stepping the block by hand; `--small` prints every row.
"""

import keras
import numpy as np
import pytest
from keras import ops

from attention_zoo.layers import MultiHead
from benchmarks import grouped_query_bench as bench

SHAPE = bench.SMALL


def data(seed=0):
    rng = np.random.default_rng(seed)
    size = (SHAPE["batch"], SHAPE["length"], SHAPE["width"])
    return rng.standard_normal(size).astype("float32")


def randomize(layer, seed=0):
    """Random kernels and biases (the biases start at zero)."""
    rng = np.random.default_rng(seed)
    layer.set_weights(
        [
            0.5 * rng.standard_normal(w.shape).astype("float32")
            for w in layer.weights
        ]
    )


@pytest.mark.parametrize("kv_heads", bench.GQA_KV_HEADS)
def test_multi_head_equals_keras_group_query_attention(kv_heads):
    x = data()
    makers = bench.gqa_candidates(SHAPE, kv_heads)
    theirs = makers["keras.GroupQueryAttention"]("float32")
    ours = makers["MultiHead"]("float32")
    theirs(x, x), ours(x, x)
    randomize(ours)
    bench.copy_weights(ours, theirs)
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours(query=x, value=x)),
        ops.convert_to_numpy(theirs(query=x, value=x)),
        atol=1e-5,
    )


@pytest.mark.parametrize("causal", [True, False])
def test_sliding_window_equals_keras_with_a_band(causal):
    x = data()
    layers = {
        name: make("float32")
        for name, make in bench.window_candidates(SHAPE, causal).items()
    }
    for layer in layers.values():
        layer(x, x)
    ours = layers["MultiHead(sliding_window)"]
    randomize(ours.attention)
    for layer in layers.values():
        if layer is not ours:
            bench.copy_weights(ours.attention, layer.attention)
    outputs = {
        name: ops.convert_to_numpy(layer(query=x, value=x))
        for name, layer in layers.items()
    }
    for name, out in outputs.items():
        np.testing.assert_allclose(
            out, outputs["MultiHead(sliding_window)"], atol=1e-5, err_msg=name
        )
    # The window matters at these shapes: without it the output differs.
    plain = MultiHead(SHAPE["heads"], SHAPE["key_dim"])
    plain(x, x)
    plain.set_weights(ours.attention.get_weights())
    unwindowed = ops.convert_to_numpy(plain(x, x, use_causal_mask=causal))
    assert np.abs(unwindowed - outputs["keras.MHA+band mask"]).max() > 1e-3


def test_measured_cache_shrinks_with_the_key_value_heads():
    per_token = {}
    for policy in bench.POLICIES:
        for kv_heads in bench.CACHE_KV_HEADS:
            block = bench.make_block(SHAPE, kv_heads, policy)
            size = bench.cache_size(block, batch=2, length=SHAPE["steps"])
            assert size["per_token"] == size["formula"]
            assert size["shape"][3] == kv_heads
            per_token[(policy, kv_heads)] = size["per_token"]
    for policy in bench.POLICIES:
        full = per_token[(policy, 8)]
        assert per_token[(policy, 2)] == full * 2 / 8
        assert per_token[(policy, 1)] == full / 8
    # The cache follows the compute dtype: bfloat16 halves it.
    for kv_heads in bench.CACHE_KV_HEADS:
        assert per_token[("mixed_bfloat16", kv_heads)] == (
            per_token[("float32", kv_heads)] / 2
        )


def test_compiled_loop_equals_stepping_by_hand():
    block = bench.make_block(SHAPE, 2, "float32")
    x, memory, cross, cache = bench.decode_inputs(block, SHAPE, batch=2)
    for i in range(SHAPE["steps"]):
        x, cache = block(
            x,
            memory,
            self_attention_cache=cache,
            cross_attention_cache=cross,
            cache_update_index=i,
        )
    loop_x, loop_cache = bench.make_decoder(block, SHAPE, 2, "xla")()
    np.testing.assert_allclose(
        ops.convert_to_numpy(loop_x), ops.convert_to_numpy(x), atol=1e-4
    )
    loop_cache = ops.convert_to_numpy(loop_cache)
    np.testing.assert_allclose(
        loop_cache, ops.convert_to_numpy(cache), atol=1e-4
    )
    # Every position was written.
    assert np.all(np.abs(loop_cache).sum(axis=(1, 3, 4)) > 0)


@pytest.mark.slow
def test_small_run_prints_a_row_per_candidate(capsys):
    results = bench.main(["--small"])
    out = capsys.readouterr().out
    modes = 2 if keras.backend.backend() == "tensorflow" else 1
    gqa = results["gqa"]
    # 2 K x 2 candidates x 2 passes x float32 x modes.
    assert len(gqa) == 2 * 2 * 2 * modes
    assert {r["kv_heads"] for r in gqa} == set(bench.GQA_KV_HEADS)
    names = {r["candidate"] for r in gqa + results["window"]}
    assert names == {
        "keras.GroupQueryAttention",
        "MultiHead",
        "keras.MHA+band mask",
        "keras.MHA(sliding_window)",
        "MultiHead(sliding_window)",
    }
    assert len(results["window"]) == 3 * 2 * modes
    decode = results["cache"]["decode"]
    batches = SHAPE["decode_batches"]
    assert len(decode) == len(bench.CACHE_KV_HEADS) * len(batches) * modes
    for row in decode:
        assert row["ms_per_token"] > 0
        if row["kv_heads"] == 8:
            assert row["speedup"] == 1.0
    for name in names | {"same mode", "Cached decoding", "vs K=8"}:
        assert name in out
