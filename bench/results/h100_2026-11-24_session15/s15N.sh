#!/usr/bin/env bash
# Session 15 call N: serving all at once, twice, with the final bundled file (fine buckets, llama 448/768 dropped).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
for r in 1 2; do
  [ "$(el)" -gt 330 ] && break
  OUT=$OUT/s_$r SKIP_BUILD=1 BUILD=build-gpu RUNS="all" SANITIZE=0 BUDGET_S=100 timeout 130 bash scripts/gpu_serving.sh > $OUT/serving_$r.txt 2>&1
  echo "round $r at $(el)s:"; grep -E '^all ' $OUT/serving_$r.txt | head -3; grep "decode steps by rows" $OUT/serving_$r.txt
done
