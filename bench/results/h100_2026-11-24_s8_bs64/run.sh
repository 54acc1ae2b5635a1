#!/usr/bin/env bash
# s8-bs64 device call (from the carried worktree copy's root, /work/main/.gpuwork/s8-bs64):
# prebuilt binaries (pre.tar.gz, sm_80 + sm_90a, built off the device) when they load, else a
# build (sm_90a); the K/V read-pattern microbenchmark (kv_pattern.cu); the kv-group / stages CUDA
# tests; A/B in fresh processes (scripts/gpu_ablations.sh, ablations.txt: GRAPHRT_DECODE_MMA_KV_GROUP
# 1 (old) / 4 / 2, GRAPHRT_DECODE_MMA_STAGES 2 / 3, rounds interleaved); ncu of decode_mma alone at
# llama bs 64 per variant; the graph-replay CUDA test; inspect --verify-cuda-graph on qwen3-0.6b
# with kv groups. A summary comes last. RUN2=1 (run2.sh): the kv-group re-run, ablations2.txt, no
# microbenchmark and no 3-stage profiles (that switch is gone after run 1).
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=bench/results/h100_2026-11-24_s8_bs64
W=/tmp/s8w; mkdir -p $W
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
mkdir -p /work/wt/s8-bs64/build/tests && ln -sfn "$PWD/tests" /work/wt/s8-bs64/tests 2>/dev/null
ln -sf "$PWD/pre/graphrt" /work/wt/s8-bs64/build/graphrt 2>/dev/null
if [ -x $GR ] && $GR --help >/dev/null 2>$W/pre.err && $CT --gtest_list_tests >/dev/null 2>>$W/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $W/pre.err)); building" >>$S
  B=build-s8
  { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
      -DCMAKE_CUDA_ARCHITECTURES=90a-real && timeout 230 cmake --build $B -j16 --target graphrt graphrt_cuda_tests; } \
    >$W/build.log 2>&1 || { grep -E "error" -A3 $W/build.log | head -40; tail -20 $W/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s8-bs64/build/graphrt
fi
echo "ready at $(el)s" >>$S
# The read-pattern microbenchmark (compiled here: ~15 s).
if [ -z "${RUN2:-}" ]; then
  (nvcc -O3 -arch=sm_90a -std=c++17 -o $W/kvp $R/kv_pattern.cu && timeout 40 $W/kvp) >$OUT/kv_pattern.txt 2>&1
  echo "microbenchmark rc=$? at $(el)s" >>$S
fi
tests() {  # label, timeout, filter
  timeout $2 $CT --gtest_filter="$3" >$OUT/tests_$1.log 2>&1
  echo "tests $1 rc=$? at $(el)s" >>$S
  grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]" $OUT/tests_$1.log | head -8 >>$S
  grep -E "Failure|Expected|Which is|differ|changed" $OUT/tests_$1.log | head -10 >>$S
}
tests kvgroups 60 'OpsAttentionCuda.DecodeMmaKvGroups*:OpsAttentionCuda.DecodeMmaWide*'
mkdir -p $W/ab
OUT=$W/ab ABLATIONS=$R/$([ -n "${RUN2:-}" ] && echo ablations2.txt || echo ablations.txt) BIN=$GR ABLATION_TIMEOUT=40 bash scripts/gpu_ablations.sh >$OUT/ab.txt 2>&1
echo "A/B done at $(el)s" >>$S
prof() {  # label, env, bench args: the attention kernel alone (6 launches of the profiled step)
  [ $(el) -gt 345 ] && return
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 30 ncu --clock-control none \
    --profile-from-start off --kernel-name regex:decode_mma --launch-count 6 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    --csv --log-file $W/ncu_$1.csv $GR bench $3 >$W/ncu_$1.out 2>$W/ncu_$1.err
  python3 - $W/ncu_$1.csv "$1" >>$OUT/ncu_attention.txt 2>&1 <<'PY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]) if 'decode_mma' in r['Kernel Name']]
by = {}
for r in rows: by.setdefault(r['Metric Name'], []).append(float(r['Metric Value'].replace(',', '')))
t = st.median(by.get('gpu__time_duration.sum', [0])); b = st.median(by.get('dram__bytes_read.sum', [0]))
g = rows[0]['Grid Size'] if rows else '?'
print(f"{sys.argv[2]:22s} grid {g:14s} {t/1e3:8.1f} us  {b/1e6:8.1f} MB  {b/t if t else 0:7.1f} GB/s  dram {st.median(by.get('dram__throughput.avg.pct_of_peak_sustained_elapsed',[0])):5.1f}%  (n {len(by.get('gpu__time_duration.sum', []))})")
PY
}
LB="decode --model builtin:llama-3.1-8b --iters 2 --batch-sizes 64 --cuda-graph-bs 64"
prof llama64_kv1 "GRAPHRT_DECODE_MMA_KV_GROUP=1" "$LB"
prof llama64_kv4 "GRAPHRT_DECODE_MMA_KV_GROUP=4" "$LB"
prof llama64_kv2 "GRAPHRT_DECODE_MMA_KV_GROUP=2" "$LB"
if [ -z "${RUN2:-}" ]; then
  prof llama64_kv4_s3 "GRAPHRT_DECODE_MMA_KV_GROUP=4 GRAPHRT_DECODE_MMA_STAGES=3" "$LB"
  prof llama64_kv1_s3 "GRAPHRT_DECODE_MMA_KV_GROUP=1 GRAPHRT_DECODE_MMA_STAGES=3" "$LB"
fi
QB="decode --model builtin:qwen3-0.6b --iters 2 --batch-sizes 64 --cuda-graph-bs 64"
prof qwen64_kv1 "GRAPHRT_DECODE_MMA_KV_GROUP=1" "$QB"
prof qwen64_kv4 "GRAPHRT_DECODE_MMA_KV_GROUP=4" "$QB"
echo "ncu done at $(el)s" >>$S
[ $(el) -lt 340 ] && tests replays $(( 400 - $(el) > 75 ? 75 : 400 - $(el) )) 'OpsAttentionCuda.DecodeGraphReplays*'
if [ $(el) -lt 370 ]; then
  GRAPHRT_DECODE_MMA_KV_GROUP=auto timeout 35 $GR inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool \
    --verify-cuda-graph --json >$W/verify.json 2>$W/verify.err
  echo "verify qwen3-0.6b pool, KV_GROUP=auto rc=$? at $(el)s: $(python3 -c "
import json; j=json.load(open('$W/verify.json')); n=b=0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'{n-b}/{n} verified')" 2>&1)" >>$S
fi
cd $W && tar czf $OUT/raw.tgz ab ncu_*.out ncu_*.err ncu_*.csv verify.* 2>/dev/null; cd - >/dev/null
echo "total $(el)s" >>$S
cat $S
[ -z "${RUN2:-}" ] && { echo "== kv_pattern microbenchmark =="; tail -20 $OUT/kv_pattern.txt; }
echo "== ncu decode_mma alone (isolated, bs 64 ctx 1024) =="; cat $OUT/ncu_attention.txt 2>/dev/null
echo "== A/B (graph ms) =="; cut -c1-34,108-300 $OUT/ab.txt
