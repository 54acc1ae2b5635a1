#!/usr/bin/env bash
# Builds graphrt and runs every test this machine can run: the CPU tests always, the CUDA tests
# (ctest label cuda) too when a GPU is present. All CUDA sources are compiled whenever the CUDA
# toolkit is installed, GPU or not.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then bash scripts/install_deps.sh; fi
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$JOBS"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  ctest --test-dir "$BUILD" --output-on-failure -j"$JOBS"
else
  echo "no GPU here: running the CPU tests (ctest -LE cuda); CUDA code was compiled"
  ctest --test-dir "$BUILD" --output-on-failure -LE cuda -j"$JOBS"
fi
