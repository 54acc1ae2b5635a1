#!/usr/bin/env bash
# s8-dattn2's one device call (from the carried worktree copy's root, /work/main/.gpuwork/s8-dattn2):
# build (sm_90a) of graphrt + graphrt_cuda_tests; the warp-pipe / early-trigger CUDA test; A/B in
# fresh processes (scripts/gpu_ablations.sh; ablations_a.txt then ablations_b.txt, the same
# variants in reverse order): old (GRAPHRT_DECODE_MMA_WARP_PIPE=0, EARLY_TRIGGER=0) vs the warp
# pipe vs the early trigger, llama bs 1/64, qwen3-0.6b bs 1/8/64, qwen3-30b-a3b bs 1; if time is
# left ncu of decode_mma alone at llama bs 64 (pipe 0 / 1) and inspect --verify-cuda-graph
# qwen3-0.6b with both switches on. Summary last. Ends by itself within ~285 s.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
END=${END:-285}
OUT=$(cd "$OUT" && pwd)
R=bench/results/h100_2026-11-24_s8_dattn2
W=/tmp/s8w; mkdir -p $W
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
finish() {
  cd $W && tar czf $OUT/raw.tgz ab_a ab_b ncu_*.out ncu_*.err ncu_*.csv verify.* build.log 2>/dev/null; cd - >/dev/null
  echo "total $(el)s" >>$S
  cat $S
  echo "== ncu decode_mma alone (llama bs 64) =="; cat $OUT/ncu_attention.txt 2>/dev/null
  echo "== A/B (graph ms) =="; cat $OUT/ab_a.txt $OUT/ab_b.txt 2>/dev/null | grep -v "^variant" | cut -c1-20,108-300
}
B=build-s8
{ cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real && timeout 205 cmake --build $B -j16 --target graphrt graphrt_cuda_tests; } \
  >$W/build.log 2>&1 || { grep -E "error" -A3 $W/build.log | head -40; tail -20 $W/build.log; cat $S; exit 1; }
GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
echo "built at $(el)s" >>$S
timeout 30 $CT --gtest_filter='OpsAttentionCuda.DecodeMmaWarpPipe*' >$OUT/tests_pipe.log 2>&1
echo "tests pipe rc=$? at $(el)s" >>$S
grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]" $OUT/tests_pipe.log | head -8 >>$S
grep -E "Failure|Expected|Which is|differ|changed|nothing" $OUT/tests_pipe.log | head -10 >>$S
for r in a b; do
  left=$(( END - 12 - $(el) ))
  [ $left -lt 15 ] && { echo "A/B round $r skipped (time)" >>$S; continue; }
  mkdir -p $W/ab_$r
  OUT=$W/ab_$r ABLATIONS=$R/ablations_$r.txt BIN=$GR ABLATION_TIMEOUT=40 timeout $left bash scripts/gpu_ablations.sh \
    >$OUT/ab_$r.txt 2>&1
  echo "A/B round $r rc=$? at $(el)s" >>$S
done
prof() {  # label, env: the attention kernel alone (6 launches of the profiled eager step), llama bs 64
  [ $(( END - $(el) )) -lt 25 ] && return
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 20 ncu --clock-control none \
    --profile-from-start off --kernel-name regex:decode_mma --launch-count 6 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum \
    --csv --log-file $W/ncu_$1.csv $GR bench decode --model builtin:llama-3.1-8b --iters 2 --batch-sizes 64 \
    --cuda-graph-bs 64 >$W/ncu_$1.out 2>$W/ncu_$1.err
  python3 - $W/ncu_$1.csv "$1" >>$OUT/ncu_attention.txt 2>&1 <<'PY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]) if 'decode_mma' in r['Kernel Name']]
by = {}
for r in rows: by.setdefault(r['Metric Name'], []).append(float(r['Metric Value'].replace(',', '')))
med = lambda k: st.median(by.get(k, [0]))
t = med('gpu__time_duration.sum'); b = med('dram__bytes_read.sum')
print(f"{sys.argv[2]:10s} {t/1e3:7.1f} us {b/1e6:7.1f} MB {b/t if t else 0:6.0f} GB/s inst {med('smsp__inst_executed.sum')/1e6:6.1f}M (n {len(by.get('gpu__time_duration.sum', []))})")
PY
}
prof pipe0 "GRAPHRT_DECODE_MMA_WARP_PIPE=0"
prof pipe1 "GRAPHRT_DECODE_MMA_WARP_PIPE=1"
if [ $(( END - $(el) )) -gt 22 ]; then
  GRAPHRT_DECODE_MMA_WARP_PIPE=1 GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1 timeout 20 $GR inspect --model builtin:qwen3-0.6b \
    --device cuda --graph-memory pool --verify-cuda-graph --json >$W/verify.json 2>$W/verify.err
  echo "verify qwen3-0.6b pool, PIPE=1 TRIG=1 rc=$? at $(el)s: $(python3 -c "
import json; j=json.load(open('$W/verify.json')); n=b=0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'{n-b}/{n} verified')" 2>&1)" >>$S
fi
finish
