"""`benchmarks.int8_export_bench` end to end on the tiny translator (every
Dense layer int8): quality, the oneDNN kernels and the timings, in a
result file its performance page shows."""

import json

import pytest

from attention_zoo.export import int8
from benchmarks import int8_export_bench
from benchmarks import pages
from tests.support import tiny_bundles
from tests.support.int8_cpu import NEEDS_INT8

LOG = """onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with Intel DL Boost
onednn_verbose,v1,primitive,exec,cpu,inner_product,brgemm:avx512_core_vnni,\
forward_training,src:u8:a:blocked:ab::f0 wei:s8:ap:blocked:AB4b64a4b::f0,,\
mb32ic256oc4465,0.25
onednn_verbose,v1,primitive,exec,cpu,inner_product,x64:gemm:jit,forward_\
training,src:f32::blocked:ab::f0 wei:f32::blocked:ba::f0,,mb32ic256oc768,0.1
onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_vnni,\
undef,src:u8::blocked:ab::f0 wei:s8::blocked:ab::f0,,32x256:256x10,0.01
onednn_verbose,v1,primitive,exec,cpu,inner_product,brgemm:avx512_core_vnni,\
forward_training,src:u8:a:blocked:ab::f0 wei:s8:ap:blocked:AB4b64a4b::f0,,\
mb1ic256oc4465,0.05
"""


def test_the_int8_kernels_are_read_from_the_verbose_log():
    assert int8_export_bench.onednn_matmul_kernels(LOG) == [
        "brgemm:avx512_core_vnni",
        "brg_matmul:avx512_core_vnni",
    ]
    assert int8_export_bench.onednn_matmul_kernels("") == []


def test_a_cpu_without_int8_matmuls_stops_it_in_one_line_first(monkeypatch):
    monkeypatch.setattr(int8, "int8_available", lambda: False)
    # The check comes before the model is even looked up.
    with pytest.raises(SystemExit) as stopped:
        int8_export_bench.main(["--model", "no-such-model", "--synthetic"])
    message = str(stopped.value.code)
    assert message.startswith("int8_export_bench: TensorFlow cannot run")
    assert "\n" not in message


@NEEDS_INT8
@pytest.mark.slow
def test_the_benchmark_scores_both_exports_then_times_them(
    shared, tmp_path, monkeypatch
):
    monkeypatch.setattr(int8, "MIN_KERNEL_SIZE", 1)
    export = tiny_bundles.tiny_export(shared, "translation", False)
    argv = ["--model", export, "--synthetic", "--pairs", "64"]
    int8_export_bench.main(argv + ["--repeats", "1", "--out", str(tmp_path)])
    with open(tmp_path / "int8_export_bench.json", encoding="utf-8") as file:
        document = json.load(file)
    result = document["result"]
    assert result["sentences"] == 64
    quality = {row["export"]: row for row in result["quality"]}
    assert list(quality) == list(int8_export_bench.EXPORTS)
    assert quality["float32"]["same translations"] == 64
    for row in quality.values():
        assert 0 <= row["same translations"] <= 64
        assert 0 <= row["bleu"] <= 100
    assert result["kernels"]  # the int8 op reached oneDNN
    assert {(row["batch"], row["export"]) for row in result["rows"]} == {
        (batch, name)
        for batch in int8_export_bench.BATCHES
        for name in int8_export_bench.EXPORTS
    }
    (topic,) = [
        t
        for t in pages.TOPICS
        if "int8_export_bench" in [s.name for s in t.sections]
    ]
    backend = document["backend"]
    page = pages.page(topic, {(backend, "int8_export_bench"): document})
    assert "same translations as float32" in page and "float32 XLA" in page
    assert result["kernels"][0] in page
