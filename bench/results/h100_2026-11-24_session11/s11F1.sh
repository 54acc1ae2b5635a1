#!/usr/bin/env bash
# Session 11 closing (final main, one call): build, every CUDA test, verify qwen3-0.6b (pool, vmm) + llama-3.1-8b
# (pool), memcheck over the new kernels' tests; PyTorch anchors + decode / prefill / MoE / capture benches and the
# targets table; traces of qwen bs 1 / MoE bs 1; fresh-process A/Bs of the session's new defaults (ABL file).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
PART=1 VERIFY_MODELS="qwen3-0.6b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=60 SANITIZE_FILTER="${SANITIZE_FILTER:-*GateUpSwigluDecodeCudaTma*:*DecodeMmaPreloadReadsTheNewRow*:*OneTokenRouterRank*:*OneTokenExpertsAddNorm*}" \
  timeout 400 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
timeout 40 build-gpu/graphrt inspect --model builtin:llama-3.1-8b --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_llama_pool.err
echo "verify llama pool rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_llama_pool.err | tr '\n' ' ' | cut -c1-200)"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "cuda tests|verify|memcheck|build|FAILED" | tail -12
echo "total $(el)s"
