#!/usr/bin/env bash
# Session 15 call F: final code (fine cuBLASLt buckets). Build graphrt + CUDA tests; A/B of the fused
# SwiGLU GEMM on llama prefill (K 4096, never measured: GRAPHRT_PREFILL_SWIGLU_GEMM=1 vs auto); then
# every CUDA test, verify qwen3-0.6b / llama-3.1-8b (pool, vmm), memcheck over the tuning tests.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/f"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 330 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"; [ $rc -ne 0 ] && { grep -E "error" build.log | head; exit 1; }
B=build-gpu/graphrt
for r in 1 2; do for v in auto 1; do
  GRAPHRT_PREFILL_SWIGLU_GEMM=$v timeout 60 $B bench prefill --model builtin:llama-3.1-8b --tokens 1024,2048,4096 --iters 5 > $OUT/f/sw_${v}_$r.txt 2>&1
done; done
for f in $OUT/f/sw_*.txt; do echo "$(basename $f): $(grep -E '^prefill ' $f | sed -E 's/eager.*piecewise //; s/ \(x.*//' | tr -s ' ' | tr '\n' ';')"; done
echo "swiglu A/B done at $(el)s"
OUT=$OUT/f SKIP_BUILD=1 PART=1 VERIFY_MODELS="qwen3-0.6b llama-3.1-8b" SANITIZE_FILTER='OpsCudaLinearTuneCache.*:OpsCudaLinear.*' SANITIZE_TIMEOUT=90 timeout $((580 - $(el))) bash scripts/gpu_final_check.sh > $OUT/f/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
tail -25 $OUT/f/part1.txt
tar czf $OUT/f.tgz -C $OUT f; rm -rf $OUT/f
echo "total $(el)s"
