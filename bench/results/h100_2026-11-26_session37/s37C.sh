#!/usr/bin/env bash
# Session 37 call C: gpu_check.sh's sanitizer step as changed in this session (the graph tests as
# gtest shards side by side, full extend tests added), on the prebuilt binaries of 615db0a.
set -u
HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
mkdir -p $PWD/c36/tests && mv $PWD/c36/graphrt_cuda_tests $PWD/c36/tests/
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
BUILD=$PWD/c36 SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 BENCH=0 SANITIZE=1 SANITIZE_SHARDS=${SHARDS:-8} \
  SANITIZE_TIMEOUT=${BOX:-250} bash scripts/gpu_check.sh 2>&1 | tail -20
