"""`benchmarks.pages`: the site's benchmark pages are what the committed
result files make (no table typed in), every benchmark has its place on a
page, and the tables say what the results hold."""

import os
import pathlib

import numpy as np

from benchmarks import pages

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Not benchmarks: the shared harness, this script, a client library and
# the CTranslate2 converter (checked by its own test, no timings).
NOT_BENCHMARKS = {"__init__", "harness", "pages", "rest_client"}
NOT_BENCHMARKS |= {
    "ctranslate2_convert",
    "ctranslate2_compare",
    "translation_pairs",
}


def test_the_committed_pages_are_what_the_results_make():
    made = pages.make_pages(pages.read_results())
    for name, text in made.items():
        path = ROOT / "docs" / "benchmarks" / name
        assert path.read_text() == text, (
            f"{path} is not what `python -m benchmarks.pages` makes"
        )


def test_every_benchmark_has_a_section_and_every_section_a_benchmark():
    modules = {
        path.stem
        for path in (ROOT / "benchmarks").glob("*.py")
        if path.stem not in NOT_BENCHMARKS
    }
    sections = [s.name for topic in pages.TOPICS for s in topic.sections]
    assert len(sections) == len(set(sections))
    assert set(sections) == modules


def test_every_result_file_is_on_a_page_with_its_machine():
    results = pages.read_results()
    assert results, "no result file in docs/benchmarks/results"
    sections = {s.name for topic in pages.TOPICS for s in topic.sections}
    for (backend, name), document in results.items():
        assert name in sections
        assert document["backend"] == backend
        assert {"date", "cpu", "cores"} <= set(document["machine"])


def test_records_become_a_table_with_ratios():
    text = pages.tables(
        [
            {"candidate": "ours", "ms": 1.234, "ratio": 1.5},
            {"candidate": "keras", "ms": 1.851, "ratio": 1.0, "note": "x"},
        ]
    )
    lines = text.splitlines()
    assert lines[0] == "| candidate | ms | ratio | note |"
    assert lines[2] == "| ours | 1.23 | 1.50x |  |"
    assert lines[3] == "| keras | 1.85 | 1.00x | x |"


def test_samples_become_their_median_and_95th_percentile():
    samples = np.random.default_rng(0).gamma(2.0, 0.01, size=101)
    text = pages.tables({"a": samples.tolist()}, unit=("ms", 1e3))
    median = 1e3 * np.median(samples)
    p95 = 1e3 * np.sort(samples)[95]  # 101 samples: index 0.95 * 100
    assert f"| a | {median:.2f} / {p95:.2f} ms |" in text


def test_a_mapping_of_numbers_is_scaled_into_its_unit():
    text = pages.tables({"(a) eager": 0.0125, "(d) ours": 0.0021}, ("ms", 1e3))
    assert "| (a) eager | 12.50 |" in text and "| (d) ours | 2.10 |" in text
    assert text.splitlines()[0] == "|  | ms |"
    text = pages.tables(
        {"(a) eager": 0.0125, "(d) ours": 0.0025}, ("ms", 1e3), "(a) eager"
    )
    assert text.splitlines()[0] == "|  | ms | speed-up vs (a) eager |"
    assert "| (d) ours | 2.50 | 5.00x |" in text


def test_speed_ups_read_as_ratios():
    text = pages.tables([{"mode": "xla", "speed-up vs best naive": 127.34}])
    assert "| xla | 127x |" in text
    assert "| 0.90x |" in pages.tables([{"ratio": 0.8975}])


def test_nested_figures_spread_into_columns():
    text = pages.tables(
        {
            "ehr": {
                "ratios": [1.28, 1.65],
                "jax": {"examples_per_s": 7105.1, "shapes": 1},
                "speed-up (same mode)": 53.12,
            }
        }
    )
    lines = text.splitlines()
    assert lines[0] == (
        "|  | ratios | jax examples_per_s | jax shapes | speed-up (same mode) |"
    )
    assert lines[2] == "| ehr | 1.28x, 1.65x | 7,105.1 | 1 | 53.12x |"


def test_the_pages_name_the_command_and_the_machine(tmp_path):
    folder = tmp_path / "tensorflow"
    folder.mkdir()
    (folder / "multi_head_bench.json").write_text(
        '{"command": "python -m benchmarks.multi_head_bench --repeats 3",'
        ' "backend": "tensorflow", "machine": {"date": "2026-11-29",'
        ' "cpu": "Some CPU", "cores": 2, "keras": "3.15.1"},'
        ' "result": [{"candidate": "MultiHead", "ratio": 1.1}]}'
    )
    made = pages.make_pages(pages.read_results(str(tmp_path)))
    text = made["attention-layers.md"]
    assert (
        "KERAS_BACKEND=tensorflow python -m benchmarks.multi_head_bench "
        "--repeats 3" in text
    )
    assert "2026-11-29, Some CPU (2 cores), keras 3.15.1" in text
    assert "| MultiHead | 1.10x |" in text
    assert "No result file yet" in text  # the other benchmarks there
    assert os.path.basename("index.md") in made
