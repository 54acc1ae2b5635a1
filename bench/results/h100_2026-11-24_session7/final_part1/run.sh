#!/usr/bin/env bash
# Session 7 closing job, call 1 (main before s7-dtail): every CUDA test, verify-cuda-graph (qwen, llama; pool, vmm),
# memcheck over this session's new kernels/paths, and the bundled cuBLASLt choices vs the heuristic (fresh processes).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
PART=1 VERIFY_MODELS="qwen3-0.6b llama-3.1-8b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=90 \
  SANITIZE_FILTER='OpsAttentionCuda.ExtendWithDecodeTail*:OpsAttentionCuda.ExtendOut*:OpsAttentionCuda.DecodeMmaWide*:OpsAttentionCuda.DecodeMmaCarry*:OpsCudaLinearTuneCache.Bundled*' \
  timeout 470 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64,128 --cuda-graph-bs 64,128 --iters 30"
cat > $OUT/abl.txt <<AB
llama bundled (default)||$L64
llama heuristic|GRAPHRT_LT_BUNDLED=0|$L64
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=60 timeout 100 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "passed|failed|FAILED|verified|verify|memcheck|tests OK|ERROR|rc " | tail -25
cut -c1-48,108-300 $OUT/ablations.txt | tail -3
echo "total $(el)s"
