"""Speed benchmarks: side-by-side timings, shown by the site's benchmark
pages (`python -m benchmarks.pages`, from `docs/benchmarks/results/`).

Run from the repository root as `python -m benchmarks.NAME [--out DIR]`.
What two benchmarks share is in `harness` (flags, compiling for the
current backend, timing in alternation with medians and ratios, result
files). Model-quality experiments are in `experiments/`, the release tool
that builds the shipped models in `release/`.
"""
