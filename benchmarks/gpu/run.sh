#!/bin/bash
# The GPU check in one command (see gpu_check.py's docstring).
#
#   bash benchmarks/gpu/run.sh fetch   # here: the wheels of requirements.txt
#                                      # into benchmarks/gpu/wheels (ignored
#                                      # by git; carry it to the device)
#   bash benchmarks/gpu/run.sh         # on the GPU machine: installs them
#                                      # (where Keras is missing) and runs
#                                      # the check into $OUT/gpu
set -euo pipefail
cd "$(dirname "$0")/../.."
wheels=benchmarks/gpu/wheels
requirements=benchmarks/gpu/requirements.txt
if [ "${1:-}" = fetch ]; then
  for version in 3.10 3.11 3.12 3.13; do
    python -m pip download -q --no-deps --only-binary=:all: \
      --python-version "$version" -d "$wheels" -r "$requirements"
  done
  exit 0
fi
if ! python -c "import keras" 2>/dev/null; then
  python -m pip install -q --no-deps --no-index --find-links "$wheels" \
    -r "$requirements"
fi
KERAS_BACKEND=jax python -m benchmarks.gpu.gpu_check \
  --out "${OUT:-outputs}/gpu" "$@"
