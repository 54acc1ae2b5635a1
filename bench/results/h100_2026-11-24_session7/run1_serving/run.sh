#!/usr/bin/env bash
# Session 7 lead run: mixed-batch decode attention (decodes riding in extend steps through decode attention).
# Build graphrt + CUDA tests; attention/piecewise CUDA tests; serving A/B (mixed off = default, mixed on);
# compute-sanitizer serve (tiny, mixed, concurrent streams); llama decode bs 256 at ctx 660.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
T=$(find build-gpu -name graphrt_cuda_tests -type f -executable | head -1)
timeout 120 $T --gtest_filter='OpsAttentionCuda.Extend*:OpsAttentionCuda.Decode*:PiecewiseGraph*:*Scheduler*:*Mixed*' > $OUT/tests.log 2>&1; echo "tests rc $? at $(el)s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran" $OUT/tests.log | head -20
mkdir -p $OUT/base $OUT/mixed
OUT=$OUT/base RUNS=all SANITIZE=0 BUDGET_S=200 SKIP_BUILD=1 BUILD=build-gpu bash scripts/gpu_serving.sh > $OUT/base.txt 2>&1
echo "base at $(el)s"
OUT=$OUT/mixed RUNS="all c16" SANITIZE=1 BUDGET_S=330 SKIP_BUILD=1 BUILD=build-gpu SERVE_ARGS=--enable-mixed-chunk bash scripts/gpu_serving.sh > $OUT/mixed.txt 2>&1
echo "mixed at $(el)s"
timeout 100 build-gpu/graphrt bench decode --model builtin:llama-3.1-8b --batch-sizes 256 --context 660 --cuda-graph-bs 256 --iters 10 > $OUT/decode256.txt 2>&1
echo "decode256 at $(el)s"
tail -4 $OUT/decode256.txt | cut -c1-300
echo "== base"; tail -6 $OUT/base.txt
echo "== mixed"; tail -8 $OUT/mixed.txt
echo "total $(el)s"
