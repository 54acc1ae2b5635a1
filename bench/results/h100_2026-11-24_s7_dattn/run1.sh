#!/usr/bin/env bash
# s7-dattn device run 1 (from the carried worktree copy's root, /work/main/.gpuwork/s7-dattn):
# prebuilt binaries (pre.tar.gz: sm_80 + sm_90a, built off the device) when they load, else a
# build (sm_90a); A/B in fresh processes (scripts/gpu_ablations.sh, ablations1.txt: carry 0/1,
# early 0/1, grid and chunk variants, bs 1/8/64 ctx 1024, llama bs 256 ctx 660, MoE bs 1/8);
# ncu of one llama bs-64 graph step, old and new; inspect --verify-cuda-graph on qwen3-0.6b;
# the decode attention CUDA tests (the new ones first, the others last). A summary table comes last.
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
if [ -x $GR ] && $GR --help >/dev/null 2>$W/pre.err && $CT --gtest_list_tests >/dev/null 2>>$W/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $W/pre.err)); building" >>$S
  B=build-s7
  { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
      -DCMAKE_CUDA_ARCHITECTURES=90a-real && timeout 240 cmake --build $B -j16 --target graphrt graphrt_cuda_tests; } \
    >$W/build.log 2>&1 || { grep -E "error" -A3 $W/build.log | head -40; tail -20 $W/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s7-dattn/build/graphrt
fi
echo "ready at $(el)s" >>$S
NEW='OpsAttentionCuda.DecodeMmaCarry*:OpsAttentionCuda.DecodeGraphReplays*'
timeout 90 $CT --gtest_filter="$NEW" >$OUT/tests.log 2>&1
echo "tests (new: carry bit-for-bit, graph replays) rc=$? at $(el)s" >>$S
mkdir -p $W/ab
OUT=$W/ab ABLATIONS=$R/ablations1.txt BIN=$GR ABLATION_TIMEOUT=45 bash scripts/gpu_ablations.sh >$OUT/ab.txt 2>&1
echo "A/B done at $(el)s" >>$S
for v in old new; do
  [ $(el) -gt 290 ] && break
  c=$([ $v = old ] && echo 0 || echo 1)
  GRAPHRT_DECODE_MMA_CARRY=$c GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 60 ncu --clock-control none \
    --profile-from-start off --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    --csv --log-file $W/ncu_$v.csv $GR bench decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 3 \
    >$W/ncu_$v.out 2>$W/ncu_$v.err
  echo "ncu $v rc=$? at $(el)s" >>$S
  python3 scripts/ncu_breakdown.py $W/ncu_$v.csv --layers 32 --top 8 >$OUT/ncu_llama64_$v.txt 2>&1
  python3 - $W/ncu_$v.csv $v >>$OUT/ncu_llama64_$v.txt 2>&1 <<'PY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]) if 'decode_mma' in r['Kernel Name']]
by = {}
for r in rows: by.setdefault(r['Metric Name'], []).append(float(r['Metric Value'].replace(',', '')))
for k, v in by.items(): print(f"decode_mma {sys.argv[2]} {k}: median {st.median(v):.4g} min {min(v):.4g} max {max(v):.4g} (n {len(v)})")
PY
done
if [ $(el) -lt 330 ]; then
  timeout 40 $GR inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json >$W/verify.json 2>$W/verify.err
  echo "verify rc=$? at $(el)s" >>$S
  python3 -c "
import json; j=json.load(open('$W/verify.json')); n=b=0; mx=0.0
for m in ('decode','piecewise'):
    for s in (j.get(m) or {}).get('per_size', []):
        n+=1; b+= not s.get('verified')
print(f'verify qwen3-0.6b pool (default = carry + early): {n-b}/{n} verified')" >>$S 2>&1
fi
T=$(( 390 - $(el) ))
if [ $T -gt 15 ]; then
  timeout $T $CT --gtest_filter="OpsAttentionCuda.Decode*:DecodeGraphs*-$NEW" >>$OUT/tests.log 2>&1
  echo "tests (other decode) rc=$? at $(el)s" >>$S
fi
grep -E "^\[  (PASSED|FAILED) |^\[==========\]|^\[       OK|^\[  FAILED  \]|INFO" $OUT/tests.log | head -40 >>$S
grep -E "Failure|Expected|Which is|differ|carry changed" $OUT/tests.log | head -20 >>$S
cd $W && tar czf $OUT/raw.tgz ab ncu_*.out ncu_*.err verify.json verify.err 2>/dev/null; gzip -c $W/ncu_new.csv >$OUT/ncu_llama64_new.csv.gz 2>/dev/null
echo "total $(el)s" >>$S
cat $S
echo "== ncu decode_mma (isolated, llama bs 64) =="; grep -h "decode_mma" $OUT/ncu_llama64_*.txt
echo "== A/B (graph ms) =="; cut -c1-48,108-300 $OUT/ab.txt
