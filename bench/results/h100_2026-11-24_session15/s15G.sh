#!/usr/bin/env bash
# Session 15 call G (final code): the benches with PyTorch anchors measured in the same job and the
# targets table (scripts/gpu_check.sh BENCHES="decode prefill moe capture").
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
if [ ! -x build-gpu/graphrt ]; then
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
fi
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout $((590 - $(el))) bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
tail -45 $OUT/check.txt
