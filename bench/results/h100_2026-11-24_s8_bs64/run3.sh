#!/usr/bin/env bash
# s8-bs64b device call (run 3, from the carried worktree copy's root, /work/main/.gpuwork/s8-bs64):
# build (sm_90a) of graphrt + graphrt_cuda_tests; the swap CUDA tests; A/B in fresh processes
# (scripts/gpu_ablations.sh, ablations3.txt: GRAPHRT_DECODE_MMA_SWAP 0 (old) / 1, llama bs 64,
# qwen bs 1/8/64, two rounds interleaved, llama bs 256 ctx 660); ncu of decode_mma alone at llama
# and qwen bs 64 per variant; the graph-replay CUDA test; inspect --verify-cuda-graph qwen3-0.6b
# with the swap on. A summary comes last. Ends by itself within ~400 s (the grant is 420).
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=bench/results/h100_2026-11-24_s8_bs64
W=/tmp/s8w; mkdir -p $W
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
B=build-s8
{ cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real && timeout 240 cmake --build $B -j16 --target graphrt graphrt_cuda_tests; } \
  >$W/build.log 2>&1 || { grep -E "error" -A3 $W/build.log | head -40; tail -20 $W/build.log; cat $S; exit 1; }
GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
echo "built at $(el)s" >>$S
tests() {  # label, timeout, filter
  timeout $2 $CT --gtest_filter="$3" >$OUT/tests_$1.log 2>&1
  echo "tests $1 rc=$? at $(el)s" >>$S
  grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]" $OUT/tests_$1.log | head -8 >>$S
  grep -E "Failure|Expected|Which is|differ|changed|nothing" $OUT/tests_$1.log | head -10 >>$S
}
tests swap 70 'OpsAttentionCuda.DecodeMmaSwap*'
mkdir -p $W/ab
OUT=$W/ab ABLATIONS=$R/ablations3.txt BIN=$GR ABLATION_TIMEOUT=40 bash scripts/gpu_ablations.sh >$OUT/ab.txt 2>&1
echo "A/B done at $(el)s" >>$S
prof() {  # label, env, bench args: the attention kernel alone (6 launches of the profiled step)
  [ $(el) -gt 330 ] && return
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 30 ncu --clock-control none \
    --profile-from-start off --kernel-name regex:decode_mma --launch-count 6 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
    --csv --log-file $W/ncu_$1.csv $GR bench $3 >$W/ncu_$1.out 2>$W/ncu_$1.err
  python3 - $W/ncu_$1.csv "$1" >>$OUT/ncu_attention.txt 2>&1 <<'PY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]) if 'decode_mma' in r['Kernel Name']]
by = {}
for r in rows: by.setdefault(r['Metric Name'], []).append(float(r['Metric Value'].replace(',', '')))
med = lambda k: st.median(by.get(k, [0]))
t = med('gpu__time_duration.sum'); b = med('dram__bytes_read.sum')
g = rows[0]['Grid Size'] if rows else '?'
print(f"{sys.argv[2]:14s} grid {g:12s} {t/1e3:7.1f} us {b/1e6:7.1f} MB {b/t if t else 0:6.0f} GB/s dram {med('dram__throughput.avg.pct_of_peak_sustained_elapsed'):4.1f}% "
      f"inst {med('smsp__inst_executed.sum')/1e6:6.1f}M (n {len(by.get('gpu__time_duration.sum', []))})")
PY
}
LB="decode --model builtin:llama-3.1-8b --iters 2 --batch-sizes 64 --cuda-graph-bs 64"
QB="decode --model builtin:qwen3-0.6b --iters 2 --batch-sizes 64 --cuda-graph-bs 64"
prof llama64_swap0 "GRAPHRT_DECODE_MMA_SWAP=0" "$LB"
prof llama64_swap1 "GRAPHRT_DECODE_MMA_SWAP=1" "$LB"
prof qwen64_swap0 "GRAPHRT_DECODE_MMA_SWAP=0" "$QB"
prof qwen64_swap1 "GRAPHRT_DECODE_MMA_SWAP=1" "$QB"
echo "ncu done at $(el)s" >>$S
if [ $(el) -lt 350 ]; then
  GRAPHRT_DECODE_MMA_SWAP=1 timeout 35 $GR inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool \
    --verify-cuda-graph --json >$W/verify.json 2>$W/verify.err
  echo "verify qwen3-0.6b pool, SWAP=1 rc=$? at $(el)s: $(python3 -c "
import json; j=json.load(open('$W/verify.json')); n=b=0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'{n-b}/{n} verified')" 2>&1)" >>$S
fi
left=$(( 395 - $(el) ))
[ $left -gt 20 ] && tests replays $left 'OpsAttentionCuda.DecodeGraphReplays*'
cd $W && tar czf $OUT/raw.tgz ab ncu_*.out ncu_*.err ncu_*.csv verify.* build.log 2>/dev/null; cd - >/dev/null
echo "total $(el)s" >>$S
cat $S
echo "== ncu decode_mma alone (isolated, bs 64 ctx 1024) =="; cat $OUT/ncu_attention.txt 2>/dev/null
echo "== A/B (graph ms) =="; cut -c1-34,108-300 $OUT/ab.txt
