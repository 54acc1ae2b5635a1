#!/usr/bin/env bash
# s5-gemv64 device run (one call, <= 240 device s): build, the GEMV / fused-linear / capture /
# decode-graph CUDA tests, then A/B of the wide GEMV (GRAPHRT_GEMV_MAX_ROWS=16 vs default 64) in
# fresh processes, then (time allowing) the silu-epilogue A/B and the qwen graph verification.
set -u
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
R=bench/results/h100_2026-11-23_s5_gemv64
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
{ cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests; } > $OUT/build.log 2>&1
echo "build rc=$? at $(el)s"
[ -x build-gpu/graphrt ] || { grep -B2 -A8 -m5 "error" $OUT/build.log | head -60; exit 1; }
T=$(ls build-gpu/tests/graphrt_cuda_tests build-gpu/graphrt_cuda_tests 2>/dev/null | head -1)
timeout 80 $T --gtest_filter='OpsCudaLinear.*:OpsCudaFusedLinear.*:OpsCudaCapture.*:DecodeGraphsCuda.*' > $OUT/tests.log 2>&1
echo "tests rc=$? at $(el)s"
grep -E "^\[  (PASSED|FAILED) |^\[==========\]|Failure|Expected|Which is|differ|error" $OUT/tests.log | head -30
mkdir -p $OUT/ablations
ABLATIONS=$R/ablations.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=55 bash scripts/gpu_ablations.sh > $OUT/ab.txt 2>&1
echo "A/B done at $(el)s"; cat $OUT/ab.txt
if [ $(el) -lt 165 ]; then
  mkdir -p $OUT/late && OUT=$OUT/late ABLATIONS=$R/ablations_late.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=45 bash scripts/gpu_ablations.sh > $OUT/ab_late.txt 2>&1
  echo "late A/B at $(el)s"; cat $OUT/ab_late.txt
fi
if [ $(el) -lt 205 ]; then
  timeout 35 build-gpu/graphrt inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json > $OUT/verify.json 2> $OUT/verify.err
  echo "verify rc=$? at $(el)s"
  python3 -c "
import json; j=json.load(open('$OUT/verify.json')); n=b=0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'verify qwen3-0.6b pool: {n-b}/{n} verified')" 2>&1 | tail -1
fi
cd $OUT && tar czf ablations.tgz ablations late 2>/dev/null; rm -rf ablations late verify.err
echo "total $(el)s"
