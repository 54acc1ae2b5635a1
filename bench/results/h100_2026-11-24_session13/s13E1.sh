#!/usr/bin/env bash
# Session 13 final, call 1: build, every CUDA test, --verify-cuda-graph qwen3-0.6b (pool, vmm),
# memcheck over this session's new tests.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
PART=1 VERIFY_MODELS="qwen3-0.6b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=100 \
  SANITIZE_FILTER='*NormPrologueVariants*:*DecodeMmaIdleExit*' \
  timeout 570 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "cuda tests|CUDA tests|verify|memcheck|build|FAILED|tests passed|tests failed" | tail -14
grep -E "^\[  FAILED|^[0-9]+% tests|The following tests FAILED" -A6 $OUT/ctest_cuda.log 2>/dev/null | head -20
echo "total $(el)s"
