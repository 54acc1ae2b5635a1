#!/usr/bin/env bash
# Session 15 call O (final commit): every CUDA test, verify llama-3.1-8b and qwen3-0.6b (pool, vmm), memcheck
# over the linear/tuning tests.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/o"
export NCCL_NVLS_ENABLE=0
OUT=$OUT/o PART=1 VERIFY_MODELS="llama-3.1-8b qwen3-0.6b" SANITIZE_FILTER='OpsCudaLinearTuneCache.*:OpsCudaLinear.*' SANITIZE_TIMEOUT=90 timeout 580 bash scripts/gpu_final_check.sh > $OUT/o/part1.txt 2>&1
echo "part1 rc $?"
grep -E "^cuda tests|^verify|compute-sanitizer|FAILED|^build" $OUT/o/part1.txt
tar czf $OUT/o.tgz -C $OUT o; rm -rf $OUT/o
