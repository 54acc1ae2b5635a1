#!/usr/bin/env bash
# s6-skinny device run (one call, <= 300 device s), from the carried worktree copy's root:
# prebuilt binaries (pre.tar.gz, built off the device) when they load, else a build (sm_90a);
# the skinny-GEMV / GEMV / fused-linear / capture / decode-graph CUDA tests; A/B in fresh
# processes (scripts/gpu_ablations.sh, ablations.txt): qwen3-0.6b and llama-3.1-8b decode bs 32,64
# with GRAPHRT_GEMV_MAX_ROWS=16 (cuBLASLt) vs 64 (skinny); then while time allows ncu of one llama
# bs-64 graph step (skinny), inspect --verify-cuda-graph on qwen3-0.6b, a second A/B round.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=bench/results/h100_2026-11-24_s6_skinny
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s6-skinny/build/tests && ln -sfn "$PWD/tests" /work/wt/s6-skinny/tests 2>/dev/null
ln -sf "$PWD/pre/graphrt" /work/wt/s6-skinny/build/graphrt 2>/dev/null
if [ -x $GR ] && $GR --help >/dev/null 2>$OUT/pre.err && $CT --gtest_list_tests >/dev/null 2>>$OUT/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $OUT/pre.err)); building" >>$S
  B=build-s6
  { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
      -DCMAKE_CUDA_ARCHITECTURES=90a-real && timeout 200 cmake --build $B -j16 --target graphrt graphrt_cuda_tests; } \
    >$OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; tail -20 $OUT/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s6-skinny/build/graphrt
fi
echo "ready at $(el)s" >>$S
timeout 75 $CT --gtest_filter='OpsCudaSkinnyLinear.*:OpsCudaLinear.*:OpsCudaFusedLinear.*:OpsCudaCapture.*:DecodeGraphsCuda.*' \
  >$OUT/tests.log 2>&1
echo "tests rc=$? at $(el)s" >>$S
grep -E "^\[  (PASSED|FAILED) |^\[==========\]|^\[  FAILED  \]" $OUT/tests.log | head -30 >>$S
grep -E "Failure|Expected|Which is|differ|worst|error" $OUT/tests.log | head -20 >>$S
mkdir -p $OUT/ab
OUT=$OUT/ab ABLATIONS=$R/ablations.txt BIN=$GR ABLATION_TIMEOUT=50 bash scripts/gpu_ablations.sh >$OUT/ab.txt 2>&1
echo "A/B done at $(el)s" >>$S; cat $OUT/ab.txt >>$S
if [ $(el) -lt 215 ]; then
  GRAPHRT_GEMV_MAX_ROWS=64 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 55 ncu --clock-control none \
    --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu_llama64.csv \
    $GR bench decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 3 >$OUT/ncu.out 2>$OUT/ncu.err
  echo "ncu rc=$? at $(el)s" >>$S
  python3 scripts/ncu_breakdown.py $OUT/ncu_llama64.csv --layers 32 --top 16 >$OUT/ncu_llama64.txt 2>&1
  head -24 $OUT/ncu_llama64.txt >>$S
  gzip -f $OUT/ncu_llama64.csv
fi
if [ $(el) -lt 250 ]; then
  GRAPHRT_GEMV_MAX_ROWS=64 timeout 30 $GR inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool \
    --verify-cuda-graph --json >$OUT/verify.json 2>$OUT/verify.err
  echo "verify rc=$? at $(el)s" >>$S
  python3 -c "
import json; j=json.load(open('$OUT/verify.json')); n=b=0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'verify qwen3-0.6b pool (GRAPHRT_GEMV_MAX_ROWS=64): {n-b}/{n} verified')" >>$S 2>&1
fi
if [ $(el) -lt 245 ]; then
  mkdir -p $OUT/late
  OUT=$OUT/late ABLATIONS=$R/ablations_late.txt BIN=$GR ABLATION_TIMEOUT=$(( (280 - $(el)) / 4 )) bash scripts/gpu_ablations.sh >$OUT/ab_late.txt 2>&1
  echo "late A/B at $(el)s" >>$S; cat $OUT/ab_late.txt >>$S
fi
cd $OUT && tar czf ab.tgz ab late 2>/dev/null; rm -rf ab late
echo "total $(el)s" >>$S
cat $S
