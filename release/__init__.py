"""Release tools: what builds the files that ship, not what measures them.

- build_zoo: trains, exports and documents the shipped models of
  `saved_models/` with the command each model card cites
  (`python -m release.build_zoo NAME`).

Run from the repository root. Speed benchmarks are in `benchmarks/`,
model-quality experiments in `experiments/`.
"""
