#!/usr/bin/env bash
# Session 12 closing, call 1 (main with rows + pdlfirst + xattn): build, every CUDA test, verify qwen3-0.6b
# (pool, vmm) + llama-3.1-8b (pool) + qwen3-30b-a3b (pool), memcheck + racecheck over the session's new tests.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
PART=1 VERIFY_MODELS="qwen3-0.6b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=90 \
  SANITIZE_FILTER='*DecodeRowsOfOneExtend*:*TriggerFirst*:*SmallExtends*:*ExtendWgmmaEqualsCpu*:*ExtendWsPersistentSameBits*' \
  timeout 420 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
timeout 45 build-gpu/graphrt inspect --model builtin:llama-3.1-8b --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_llama_pool.err
echo "verify llama rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_llama_pool.err | tr '\n' ' ' | cut -c1-200)"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "cuda tests|CUDA tests|verify|memcheck|build|FAILED|tests passed|tests failed" | tail -14
echo "total $(el)s"
