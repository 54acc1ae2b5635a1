#!/usr/bin/env bash
# The one device run of s5-dattn2 (from the copied worktree's root): prebuilt binaries from
# pre.tar.gz (built on the work machine, sm_80 + sm_90a), else a build (sm_90a only); the decode
# attention and decode graph CUDA tests; A/B of the mma path's merge (GRAPHRT_DECODE_MMA_CLUSTER:
# 0 = global merge as in s5-dattn, default = cluster merge at small batch) and of the
# shared-memory carveout (GRAPHRT_DECODE_MMA_CARVEOUT=-1) in fresh processes of one binary; then,
# while time allows, verify-cuda-graph on qwen3-30b-a3b and ncu of the attention kernel at bs 1.
# Writes $OUT/summary.txt and $OUT/all.tgz.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
R=/tmp/s5r2; mkdir -p $R  # outside $OUT: only all.tgz and summary.txt come back
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >$S
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s5-dattn2/build/tests && ln -sfn "$PWD/tests" /work/wt/s5-dattn2/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s5-dattn2/build/graphrt
if [ -x $GR ] && $GR --help >/dev/null 2>$R/pre.err && $CT --gtest_list_tests >/dev/null 2>>$R/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $R/pre.err)); building" >>$S
  B=build-s5
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real >$R/build.log 2>&1 &&
    cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
    { grep -E "error" -A3 $R/build.log | head -40; tail -20 $R/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
fi
echo "ready at $(el)s" >>$S
timeout 100 $CT --gtest_filter='OpsAttentionCuda.Decode*:DecodeGraphs*' >$R/tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|Failure|error|Skipped|SKIPPED|INFO' $R/tests.log | head -20 >>$S
M="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
L1="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
Q1="decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
C=GRAPHRT_DECODE_MMA_CLUSTER
V=GRAPHRT_DECODE_MMA_CARVEOUT
A=GRAPHRT_DECODE_ATTENTION
# old = the s5-dattn global merge ($C=0); new = the default (cluster merge where batch x kv heads < SMs).
cat >$R/ab1.txt <<AB
moe bs1,8 old (global merge)|$C=0|$M
moe bs1,8 new (cluster, auto)|$C=-1|$M
llama bs1 old (global merge)|$C=0|$L1
llama bs1 new (cluster, auto)|$C=-1|$L1
moe bs1,8 cluster 8 (2 splits a block)|$C=8|$M
moe bs1,8 cluster 16 (forced at bs 8 too)|$C=16|$M
moe bs1,8 new, carveout unset|$C=-1 $V=-1|$M
moe bs1,8 old, carveout unset|$C=0 $V=-1|$M
llama bs1 new, carveout unset|$C=-1 $V=-1|$L1
qwen bs1 auto (legacy)||$Q1
qwen bs1 mma global merge|$A=mma $C=0|$Q1
qwen bs1 mma cluster|$A=mma $C=-1|$Q1
moe bs1,8 old (global merge) again|$C=0|$M
moe bs1,8 new (cluster, auto) again|$C=-1|$M
AB
OUT=$R/ab1 ABLATIONS=$R/ab1.txt BIN=$GR ABLATION_TIMEOUT=40 scripts/gpu_ablations.sh >$R/ab1.log 2>&1
echo "ab1 done at $(el)s" >>$S
tar czf $OUT/all.tgz -C /tmp s5r2
if [ $(el) -lt 110 ]; then
  timeout 30 $GR inspect --model builtin:qwen3-30b-a3b --device cuda --graph-memory pool --mem-fraction-static 0.93 \
    --cuda-graph-bs 1,2,4,8 --disable-piecewise-cuda-graph --verify-cuda-graph --json >$R/verify_moe.json 2>$R/verify_moe.err
  echo "verify moe (auto = cluster merge, decode bs 1,2,4,8) rc $? at $(el)s" >>$S
  python3 - $R/verify_moe.json >>$S 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for s in (j.get("decode") or {}).get("per_size", []):
    print("verify moe decode bs", s.get("bs"), "verified", s.get("verified"), "max_abs_diff", s.get("max_abs_diff"))
PY
fi
for v in 0 -1; do
  if [ $(el) -lt 135 ]; then
    env GRAPHRT_BENCH_PROFILE=1 $C=$v timeout 25 ncu --clock-control none --profile-from-start off \
      --kernel-name regex:'decode_mma' --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      --csv --log-file $R/ncu_moe1_$v.csv $GR bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 \
      --batch-sizes 1 --cuda-graph-bs 1 --iters 3 >$R/ncu_moe1_$v.out 2>&1
    echo "ncu moe bs1 cluster mode $v rc $? at $(el)s" >>$S
  fi
done
tar czf $OUT/all.tgz -C /tmp s5r2
grep -v "^variant " $R/ab1.log >>$S
for v in 0 -1; do
  python3 - $R/ncu_moe1_$v.csv "cl$v" >>$S 2>/dev/null <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; ki = h.index("Kernel Name"); mi = h.index("Metric Name"); vi = h.index("Metric Value")
acc = collections.defaultdict(list)
for r in rows[1:]:
    acc[(r[ki].split("(")[0][-50:], r[mi])].append(float(r[vi].replace(",", "")))
for (k, m), v in sorted(acc.items()):
    v = sorted(v)
    print(f"ncu {sys.argv[2]:5s} {k:50s} {m[:32]:32s} n={len(v)} min={v[0]:.0f} median={v[len(v)//2]:.2f} max={v[-1]:.0f}")
PY
done
echo "total $(el)s" >>$S
cat $S
