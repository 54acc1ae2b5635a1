#!/usr/bin/env bash
# Session 13 closing, call 1 (main with the one-pass / packed norm prologue): build, every CUDA test,
# --verify-cuda-graph qwen3-0.6b (pool, vmm) + llama-3.1-8b (pool), memcheck + racecheck over the fused-linear tests.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
PART=1 VERIFY_MODELS="qwen3-0.6b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=110 \
  SANITIZE_FILTER='*NormPrologueVariants*:*DecodeMmaIdleExit*' \
  timeout 480 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
timeout 45 build-gpu/graphrt inspect --model builtin:llama-3.1-8b --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_llama_pool.err
echo "verify llama rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_llama_pool.err | tr '\n' ' ' | cut -c1-200)"
if [ "$(el)" -lt 520 ]; then
  timeout 50 compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*NormPrologueVariants*:*DecodeRowsOfOneExtend*' > /tmp/rc.log 2>&1
  rc=$?; grep -E "^\[       OK|^\[  FAILED|RACECHECK SUMMARY|ERROR SUMMARY|hazard" /tmp/rc.log | head -40 > $OUT/racecheck.log
  echo "racecheck rc $rc at $(el)s: $(grep -cE '^\[       OK \]' $OUT/racecheck.log) tests OK, $(grep -E 'SUMMARY' $OUT/racecheck.log | tail -1)"
fi
grep -vE "^\s*$" $OUT/part1.txt | grep -E "cuda tests|CUDA tests|verify|memcheck|build|FAILED|tests passed|tests failed" | tail -14
echo "total $(el)s"
