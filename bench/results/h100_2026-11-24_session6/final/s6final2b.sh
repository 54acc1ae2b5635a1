#!/usr/bin/env bash
# Session 6 closing job, call B: full-schedule capture in fresh processes (medians), then serving all at once.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
OUT=$OUT/cap SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 ANCHORS=0 BENCHES="capture" timeout 240 bash scripts/gpu_check.sh > $OUT/cap.txt 2>&1
echo "capture at $(el)s"
OUT=$OUT/serving SKIP_BUILD=1 BUILD=build-gpu SANITIZE=0 BUDGET_S=60 timeout 230 bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving at $(el)s"
grep "full-schedule" $OUT/cap.txt
tail -25 $OUT/serving.txt
echo "total $(el)s"
