#!/usr/bin/env bash
# The one device run of s5-dattn (from the copied worktree's root): prebuilt binaries from
# pre.tar.gz when they load there, else a build (sm_90a only); the decode attention and decode
# graph CUDA tests; A/B of the decode attention path (scripts/gpu_ablations.sh, fresh processes,
# same binary); then, while time allows, knob variants, verify-cuda-graph on qwen3-30b-a3b and ncu
# of the attention kernels. Writes $OUT/summary.txt and $OUT/all.tgz.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
R=/tmp/s5r; mkdir -p $R  # outside $OUT: only all.tgz and summary.txt come back
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >$S
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s5-dattn/build/tests && ln -sfn "$PWD/tests" /work/wt/s5-dattn/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s5-dattn/build/graphrt
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
timeout 120 $CT --gtest_filter='OpsAttentionCuda.Decode*:DecodeGraphs*:ModelCuda*' >$R/tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|Failure|error' $R/tests.log | head -20 >>$S
M="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
L1="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
Q1="decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
Q64="decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
A=GRAPHRT_DECODE_ATTENTION
# Old = the path the session-4 auto rule takes at each point (legacy below 2 blocks per SM, fused above).
cat >$R/ab1.txt <<AB
moe bs1,8 old (legacy)|$A=legacy|$M
moe bs1,8 mma|$A=mma|$M
llama bs1 old (legacy)|$A=legacy|$L1
llama bs1 mma|$A=mma|$L1
qwen bs1 old (legacy)|$A=legacy|$Q1
qwen bs1 mma|$A=mma|$Q1
llama bs64 old (fused)|$A=fused|$L64
llama bs64 mma|$A=mma|$L64
qwen bs64 old (fused)|$A=fused|$Q64
qwen bs64 mma|$A=mma|$Q64
AB
cat >$R/ab2.txt <<AB
llama bs64 mma chunk 256|$A=mma GRAPHRT_DECODE_MMA_CHUNK=256|$L64
moe bs1,8 mma chunk 32 splits 32|$A=mma GRAPHRT_DECODE_MMA_CHUNK=32 GRAPHRT_DECODE_MMA_SPLITS=32|$M
qwen bs64 mma chunk 256|$A=mma GRAPHRT_DECODE_MMA_CHUNK=256|$Q64
llama bs64 mma 64 blocks per SM (no split loop)|$A=mma GRAPHRT_DECODE_BLOCKS_PER_SM=64|$L64
AB
OUT=$R/ab1 ABLATIONS=$R/ab1.txt BIN=$GR ABLATION_TIMEOUT=60 scripts/gpu_ablations.sh >$R/ab1.log 2>&1
echo "ab1 done at $(el)s" >>$S
tar czf $OUT/all.tgz -C /tmp s5r
if [ $(el) -lt 120 ]; then
  OUT=$R/ab2 ABLATIONS=$R/ab2.txt BIN=$GR ABLATION_TIMEOUT=40 scripts/gpu_ablations.sh >$R/ab2.log 2>&1
  echo "ab2 done at $(el)s" >>$S
fi
if [ $(el) -lt 150 ]; then
  timeout 40 $GR inspect --model builtin:qwen3-30b-a3b --device cuda --graph-memory pool --mem-fraction-static 0.93 \
    --cuda-graph-bs 1,2,4,8 --disable-piecewise-cuda-graph --verify-cuda-graph --json >$R/verify_moe.json 2>$R/verify_moe.err
  echo "verify moe (auto, decode bs 1,2,4,8) rc $? at $(el)s" >>$S
  python3 - $R/verify_moe.json >>$S 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for s in (j.get("decode") or {}).get("per_size", []):
    print("verify moe decode bs", s.get("bs"), "verified", s.get("verified"), "max_abs_diff", s.get("max_abs_diff"))
PY
fi
for v in legacy mma; do
  if [ $(el) -lt 180 ]; then
    env GRAPHRT_BENCH_PROFILE=1 $A=$v timeout 30 ncu --clock-control none --profile-from-start off \
      --kernel-name regex:'decode|combine' --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      --csv --log-file $R/ncu_moe1_$v.csv $GR bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 \
      --batch-sizes 1 --cuda-graph-bs 1 --iters 3 >$R/ncu_moe1_$v.out 2>&1
    echo "ncu moe bs1 $v rc $? at $(el)s" >>$S
  fi
done
tar czf $OUT/all.tgz -C /tmp s5r
cat $R/ab1.log $R/ab2.log 2>/dev/null | grep -v "^variant " >>$S
for v in legacy mma; do
  python3 - $R/ncu_moe1_$v.csv $v >>$S 2>/dev/null <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; ki = h.index("Kernel Name"); mi = h.index("Metric Name"); vi = h.index("Metric Value")
acc = collections.defaultdict(list)
for r in rows[1:]:
    acc[(r[ki].split("(")[0][:40], r[mi])].append(float(r[vi].replace(",", "")))
for (k, m), v in sorted(acc.items()):
    print(f"ncu {sys.argv[2]:6s} {k:40s} {m[:40]:40s} n={len(v)} median={sorted(v)[len(v)//2]:.2f}")
PY
done
echo "total $(el)s" >>$S
cat $S
