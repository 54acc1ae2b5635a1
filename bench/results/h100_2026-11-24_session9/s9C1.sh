#!/usr/bin/env bash
# Session 9 closing, call 1 (main with this session's merges): every CUDA test, verify-cuda-graph
# (qwen3-0.6b, llama-3.1-8b, qwen3-30b-a3b; pool, vmm), memcheck over the new extend / prepare_qkv / silu tests,
# then A/Bs in fresh processes, interleaved: qwen prefill 4096 prepare_qkv lanes (default) vs lanes-next,
# llama prefill 4096 the new extend default vs the session-8 rule (auto-s8).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
PART=1 VERIFY_MODELS="qwen3-0.6b llama-3.1-8b qwen3-30b-a3b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=80 \
  SANITIZE_FILTER='OpsAttentionCuda.ExtendWsPersistent*:OpsAttentionCuda.ExtendOutEveryKernel*:OpsCudaPrepareQkv.*:OpsCudaActivation.*:-OpsCudaPrepareQkv.ManyTokens*' \
  timeout 430 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
LP="prefill --model builtin:llama-3.1-8b --tokens 4096 --iters 5"
cat > $OUT/abl.txt <<AB
qwen lanes a||$QP
qwen lanes-next a|GRAPHRT_PREPARE_QKV=lanes-next|$QP
qwen lanes b||$QP
qwen lanes-next b|GRAPHRT_PREPARE_QKV=lanes-next|$QP
llama default a||$LP
llama auto-s8 a|GRAPHRT_EXTEND_KERNEL=auto-s8|$LP
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 timeout $((588 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "passed|failed|FAILED|verified|verify|memcheck|tests OK|ERROR|rc |Timeout|build" | tail -25
cut -c1-48,107-300 $OUT/ablations.txt | tail -7
echo "total $(el)s"
