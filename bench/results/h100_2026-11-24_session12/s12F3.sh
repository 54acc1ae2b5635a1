#!/usr/bin/env bash
# Session 12 closing, call 3 (final main, with gemv16 merged if it was): build; GEMV + rows CUDA tests;
# A/B of GRAPHRT_GEMV_BLOCKS_PER_SM (qwen bs 1, fresh processes, 2 rounds); benches (decode, prefill) with
# PyTorch anchors and the targets table; the serving benchmark (issue 17: 1000 requests at once, then
# concurrency 1/16/64/256).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1
rc=$?; echo "build rc $rc at $(el)s"
if [ $rc != 0 ]; then grep -E "error" -A3 $OUT/build.log | head -40; exit 1; fi
B=build-gpu/graphrt
timeout 90 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*Gemv*:*SmallM*:*FusedLinear*:*DecodeRowsOfOneExtend*:*SmallExtends*:*DecodeGraphsCuda*' > $OUT/cuda_tests.txt 2>&1
echo "cuda tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_tests.txt | tr '\n' ' ')"
Q1="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
M1="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
cat > /tmp/abl.txt <<ABL
qwen bs1,8 blocks/SM 2 a||$Q1
qwen bs1,8 blocks/SM 1 a|GRAPHRT_GEMV_BLOCKS_PER_SM=1|$Q1
qwen bs1,8 blocks/SM 2 b||$Q1
qwen bs1,8 blocks/SM 1 b|GRAPHRT_GEMV_BLOCKS_PER_SM=1|$Q1
ABL
ABLATIONS=/tmp/abl.txt BIN=$B ABLATION_TIMEOUT=40 OUT=$OUT/ab timeout 120 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"; cut -c1-48,107-300 $OUT/ablations.txt | tail -6
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill" timeout 150 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-220
SKIP_BUILD=1 BUILD=build-gpu SANITIZE=0 BUDGET_S=$((560 - $(el))) OUT=$OUT/serving timeout $((580 - $(el))) bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving rc $? at $(el)s"; tail -14 $OUT/serving.txt | cut -c1-220
echo "total $(el)s"
