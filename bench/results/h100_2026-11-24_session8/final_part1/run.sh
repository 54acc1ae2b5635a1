#!/usr/bin/env bash
# Session 8 closing, call 1 (main with s8-attn and the serving defaults): every CUDA test, verify-cuda-graph
# (qwen3-0.6b, llama-3.1-8b, qwen3-30b-a3b; pool, vmm), memcheck over the new extend kernels, and llama prefill
# 4096 with the new extend default vs the session-7 rule (auto-s7), fresh processes, interleaved.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
PART=1 VERIFY_MODELS="qwen3-0.6b llama-3.1-8b qwen3-30b-a3b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=100 \
  SANITIZE_FILTER='OpsAttentionCuda.ExtendWgmmaEqualsCpu*:OpsAttentionCuda.ExtendOutEveryKernel*:OpsAttentionCuda.ExtendKernelChoice*' \
  timeout 440 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
LP="prefill --model builtin:llama-3.1-8b --tokens 4096 --iters 5"
cat > $OUT/abl.txt <<AB
llama new default a||$LP
llama auto-s7 a|GRAPHRT_EXTEND_KERNEL=auto-s7|$LP
llama new default b||$LP
llama auto-s7 b|GRAPHRT_EXTEND_KERNEL=auto-s7|$LP
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=50 timeout $((585 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "passed|failed|FAILED|verified|verify|memcheck|tests OK|ERROR|rc |Timeout" | tail -25
cut -c1-48,107-300 $OUT/ablations.txt | tail -5
echo "total $(el)s"
