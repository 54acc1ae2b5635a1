#!/usr/bin/env bash
# Session 15 call I (final code): serving all-at-once and concurrency 256 with the decode-rows histogram:
# which batch sizes serving's decode steps run at (why the fine buckets did not move it).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
OUT=$OUT/serving SKIP_BUILD=1 BUILD=build-gpu RUNS="all c256" SANITIZE=0 BUDGET_S=200 timeout 280 bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving rc $? at $(el)s"; tail -14 $OUT/serving.txt
tar czf $OUT/serving.tgz -C $OUT serving && rm -rf $OUT/serving
