#!/usr/bin/env bash
# Session 37 call D: racecheck over the whole graph-test filter through gpu_check.sh's sanitizer step
# (3 gtest shards side by side, one box), on the prebuilt binaries of 615db0a.
set -u
HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
mkdir -p $PWD/c36/tests && mv $PWD/c36/graphrt_cuda_tests $PWD/c36/tests/
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
BUILD=$PWD/c36 SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 BENCH=0 SANITIZE=1 SANITIZE_TOOLS=racecheck \
  SANITIZE_SHARDS=${SHARDS:-3} SANITIZE_RUN_SHARDS="${RUN:-0 1 2}" SANITIZE_TIMEOUT=${BOX:-530} bash scripts/gpu_check.sh 2>&1 | tail -4
grep -E "^\[       OK" $OUT/sanitizer_racecheck.log | sed -E 's/^\[       OK \] //' | tr '\n' ';'
