#!/usr/bin/env bash
# Session 10 closing, call 1 (final main): build, every CUDA test (ctest -L cuda), memcheck over the SwiGLU GEMM
# tests, --verify-cuda-graph qwen3-0.6b (pool, vmm) and llama-3.1-8b (pool, vmm) under the new defaults.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
PART=1 VERIFY_MODELS="qwen3-0.6b llama-3.1-8b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=90 \
  SANITIZE_FILTER='*GateUpSwiglu*' timeout 570 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "passed|failed|FAILED|verified|verify|memcheck|tests OK|ERROR|rc |Timeout|build|tests" | tail -25
grep -E "tests passed|FAILED|Failed" $OUT/ctest_cuda.log 2>/dev/null | tail -8
echo "total $(el)s"
