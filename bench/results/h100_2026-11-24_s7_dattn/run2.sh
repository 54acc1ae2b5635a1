#!/usr/bin/env bash
# s7-dattn device run 2 (from /work/main/.gpuwork/s7-dattn): prebuilt binaries as in run1.sh;
# the mma decode tests with GRAPHRT_DECODE_MMA_WIDE=1 GRAPHRT_DECODE_MMA_HEAD_CLUSTER=8 (the
# candidates); A/B in fresh processes (ablations2.txt, two rounds interleaved): the wide rule
# (512-token splits, one block each, from SMs pairs on), head clusters of 8, both; llama bs 32/64/128,
# qwen bs 1/32/64 (ctx 1024), llama bs 256 ctx 660 and bs 64 ctx 4096; MoE bs 1/8 carry 0/1;
# ncu of the attention kernel alone at llama bs 32/64/128/256 (duration vs bytes: the fixed part
# and the steady bandwidth) and bs 64 wide / head clusters; verify-cuda-graph on qwen3-0.6b.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=bench/results/h100_2026-11-24_s7_dattn
W=/tmp/s7w; mkdir -p $W
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
mkdir -p /work/wt/s7-dattn/build/tests && ln -sfn "$PWD/tests" /work/wt/s7-dattn/tests 2>/dev/null
ln -sf "$PWD/pre/graphrt" /work/wt/s7-dattn/build/graphrt 2>/dev/null
if ! { [ -x $GR ] && $GR --help >/dev/null 2>$W/pre.err && $CT --gtest_list_tests >/dev/null 2>>$W/pre.err; }; then
  echo "prebuilt failed ($(head -c 300 $W/pre.err)); building" >>$S
  B=build-s7
  { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
      -DCMAKE_CUDA_ARCHITECTURES=90a-real && timeout 240 cmake --build $B -j16 --target graphrt graphrt_cuda_tests; } \
    >$W/build.log 2>&1 || { grep -E "error" -A3 $W/build.log | head -40; tail -20 $W/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s7-dattn/build/graphrt
fi
echo "ready at $(el)s" >>$S
GRAPHRT_DECODE_MMA_WIDE=1 GRAPHRT_DECODE_MMA_HEAD_CLUSTER=8 timeout 80 $CT \
  --gtest_filter='OpsAttentionCuda.DecodeMma*:OpsAttentionCuda.DecodeEveryPath*:DecodeGraphsCuda.*' >$OUT/tests.log 2>&1
echo "tests (WIDE=1 HEAD_CLUSTER=8) rc=$? at $(el)s" >>$S
grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]" $OUT/tests.log | head -20 >>$S
grep -E "Failure|Expected|Which is|differ|carry changed" $OUT/tests.log | head -12 >>$S
mkdir -p $W/ab
OUT=$W/ab ABLATIONS=$R/ablations2.txt BIN=$GR ABLATION_TIMEOUT=45 bash scripts/gpu_ablations.sh >$OUT/ab.txt 2>&1
echo "A/B done at $(el)s" >>$S
prof() {  # label, env, bench args: the attention kernel alone (6 launches of the profiled step)
  [ $(el) -gt 280 ] && return
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 40 ncu --clock-control none \
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
print(f"{sys.argv[2]:28s} grid {g:14s} {t/1e3:8.1f} us  {b/1e6:8.1f} MB  {b/t if t else 0:6.3f} TB/s  dram {st.median(by.get('dram__throughput.avg.pct_of_peak_sustained_elapsed',[0])):5.1f}%  (n {len(by.get('gpu__time_duration.sum', []))})")
PY
}
LB="decode --model builtin:llama-3.1-8b --iters 2"
prof bs64_base "GRAPHRT_DECODE_MMA_WIDE=0" "$LB --batch-sizes 64 --cuda-graph-bs 64"
prof bs64_wide "GRAPHRT_DECODE_MMA_WIDE=1" "$LB --batch-sizes 64 --cuda-graph-bs 64"
prof bs64_hc8 "GRAPHRT_DECODE_MMA_HEAD_CLUSTER=8" "$LB --batch-sizes 64 --cuda-graph-bs 64"
prof bs32_base "GRAPHRT_DECODE_MMA_WIDE=0" "$LB --batch-sizes 32 --cuda-graph-bs 32"
prof bs128_base "GRAPHRT_DECODE_MMA_WIDE=0" "$LB --batch-sizes 128 --cuda-graph-bs 128"
prof bs256_base "GRAPHRT_DECODE_MMA_WIDE=0" "$LB --batch-sizes 256 --cuda-graph-bs 256"
prof bs256_wide "GRAPHRT_DECODE_MMA_WIDE=1" "$LB --batch-sizes 256 --cuda-graph-bs 256"
echo "ncu done at $(el)s" >>$S
for v in default "GRAPHRT_DECODE_MMA_WIDE=1 GRAPHRT_DECODE_MMA_HEAD_CLUSTER=8"; do
  [ $(el) -gt 330 ] && break
  e=$([ "$v" = default ] && echo "GRAPHRT_X=0" || echo "$v")
  env $e timeout 40 $GR inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json >$W/verify.json 2>$W/verify.err
  echo "verify ($v) rc=$? at $(el)s: $(python3 -c "
import json; j=json.load(open('$W/verify.json')); n=b=0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'{n-b}/{n} verified')" 2>&1)" >>$S
done
cd $W && tar czf $OUT/raw.tgz ab ncu_*.out ncu_*.err ncu_*.csv 2>/dev/null
echo "total $(el)s" >>$S
cat $S
echo "== ncu decode_mma alone (isolated, llama ctx 1024) =="; cat $OUT/ncu_attention.txt
echo "== A/B (graph ms) =="; cut -c1-40,108-300 $OUT/ab.txt
