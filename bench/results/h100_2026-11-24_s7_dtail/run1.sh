#!/usr/bin/env bash
# s7-dtail device run 1 (from /work/main/.gpuwork/s7-dtail): build graphrt + graphrt_cuda_tests;
# the persistent-kernel test and OpsAttentionCuda.Decode* with PERSIST=1 in force for the large
# cases; A/B PERSIST=0|1 in fresh processes (ablations1.txt); ncu of decode_mma alone at llama
# bs 64 old vs persist; verify-cuda-graph on qwen3-0.6b with PERSIST=1 (bs 64 is captured there).
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=bench/results/h100_2026-11-24_s7_dtail
W=/tmp/s7t; mkdir -p $W
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >$S 2>&1
B=build-gpu
{ cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real && timeout 230 cmake --build $B -j16 --target graphrt graphrt_cuda_tests; } \
  >$W/build.log 2>&1 || { grep -E "error" -A3 $W/build.log | head -40; tail -20 $W/build.log; cat $S; exit 1; }
GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests 2>/dev/null || ls $B/graphrt_cuda_tests)
echo "built at $(el)s" >>$S
timeout 40 $CT --gtest_filter='OpsAttentionCuda.DecodeMmaPersist*' >$OUT/tests_persist.log 2>&1
echo "persist test rc=$? at $(el)s" >>$S
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $OUT/tests_persist.log | head -5 >>$S
grep -E "Failure|Expected|Which is|differ|changed|Error" $OUT/tests_persist.log | head -8 >>$S
mkdir -p $W/ab
OUT=$W/ab ABLATIONS=$R/ablations1.txt BIN=$GR ABLATION_TIMEOUT=40 timeout $((270 - $(el))) bash scripts/gpu_ablations.sh >$OUT/ab.txt 2>&1
echo "A/B done rc=$? at $(el)s" >>$S
T=$((330 - $(el))); [ $T -gt 120 ] && T=120
if [ $T -gt 20 ]; then
  timeout $T $CT --gtest_filter='OpsAttentionCuda.Decode*' >$OUT/tests.log 2>&1
  echo "Decode* tests rc=$? (limit ${T}s) at $(el)s" >>$S
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^\[       OK" $OUT/tests.log | head -30 >>$S
  grep -E "Failure|Expected|Which is|differ|changed|Error" $OUT/tests.log | head -8 >>$S
fi
prof() {
  [ $(el) -gt 345 ] && return
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 25 ncu --clock-control none \
    --profile-from-start off --kernel-name regex:decode_mma --launch-count 6 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum \
    --csv --log-file $W/ncu_$1.csv $GR bench $3 >$W/ncu_$1.out 2>$W/ncu_$1.err
  python3 - $W/ncu_$1.csv "$1" >>$OUT/ncu_attention.txt 2>&1 <<'PY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]) if 'decode_mma' in r['Kernel Name']]
by = {}
for r in rows: by.setdefault(r['Metric Name'], []).append(float(r['Metric Value'].replace(',', '')))
t = st.median(by.get('gpu__time_duration.sum', [0])); b = st.median(by.get('dram__bytes_read.sum', [0]))
g = rows[0]['Grid Size'] if rows else '?'
print(f"{sys.argv[2]:16s} grid {g:14s} {t/1e3:8.1f} us  {b/1e6:8.1f} MB  {b/t if t else 0:6.3f} GB/s  (n {len(by.get('gpu__time_duration.sum', []))})")
PY
}
LB="decode --model builtin:llama-3.1-8b --iters 2 --batch-sizes 64 --cuda-graph-bs 64"
prof old "GRAPHRT_DECODE_MMA_PERSIST=0" "$LB"
prof persist "GRAPHRT_DECODE_MMA_PERSIST=1" "$LB"
if [ $(el) -lt 360 ]; then
  GRAPHRT_DECODE_MMA_PERSIST=1 timeout 25 $GR inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json >$W/verify.json 2>$W/verify.err
  echo "verify (PERSIST=1) rc=$? at $(el)s: $(python3 -c "
import json; j=json.load(open('$W/verify.json')); n=b=0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'{n-b}/{n} verified')" 2>&1)" >>$S
fi
cd $W && tar czf $OUT/raw.tgz ab ncu_*.out ncu_*.err ncu_*.csv build.log 2>/dev/null
echo "total $(el)s" >>$S
cat $S
echo "== ncu decode_mma alone (isolated, llama bs 64 ctx 1024) =="; cat $OUT/ncu_attention.txt 2>/dev/null
echo "== A/B (graph ms) =="; cut -c1-40,108-300 $OUT/ab.txt | tail -30
