#!/usr/bin/env bash
# Session 10 closing (final main, one call): build, every CUDA test, verify qwen3-0.6b (pool, vmm) and llama-3.1-8b
# (pool), memcheck over the SwiGLU GEMM tests; then PyTorch anchors + decode / prefill / MoE / capture benches and
# the targets table; then fresh-process A/Bs of the prefill SwiGLU defaults.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
PART=1 VERIFY_MODELS="qwen3-0.6b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=60 SANITIZE_FILTER='*GateUpSwiglu*' \
  timeout 400 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
timeout 40 build-gpu/graphrt inspect --model builtin:llama-3.1-8b --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_llama_pool.err
echo "verify llama pool rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_llama_pool.err | tr '\n' ' ' | cut -c1-200)"
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout 100 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
QP8="prefill --model builtin:qwen3-0.6b --tokens 8192 --schedule-max-tokens 8192 --iters 10"
cat > $OUT/abl.txt <<AB
qwen 4096 default a||$QP
qwen 4096 tile 128 a|GRAPHRT_SWIGLU_TILE=128|$QP
qwen 4096 unfused a|GRAPHRT_PREFILL_SWIGLU_GEMM=0|$QP
qwen 4096 default b||$QP
qwen 4096 tile 128 b|GRAPHRT_SWIGLU_TILE=128|$QP
qwen 4096 unfused b|GRAPHRT_PREFILL_SWIGLU_GEMM=0|$QP
qwen 8192 default||$QP8
qwen 8192 unfused|GRAPHRT_PREFILL_SWIGLU_GEMM=0|$QP8
qwen 4096 default c||$QP
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 timeout $((585 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "cuda tests|verify|memcheck|build" | tail -8
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-200
cut -c1-48,107-300 $OUT/ablations.txt | tail -10
tar czf $OUT/check.tgz -C $OUT check && rm -rf $OUT/check
echo "total $(el)s"
