#!/usr/bin/env bash
# s7-prefill, device call 2 (H100): build; the new/changed tests; prefill A/B of the attention
# output (direct buffer + tail zeroing vs the session-6 write-back copy and full zeroing) in fresh
# processes; inspect --verify-cuda-graph on qwen3-0.6b; ncu of the prepare_qkv kernels at 4096.
# (GRAPHRT_SILU_KERNEL was removed after this run with its rows kernel: now an ignored variable.)
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R; S=$OUT/summary.txt
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $R/build.log 2>&1 && timeout 230 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $R/build.log 2>&1 || { grep -B2 -A5 -i error $R/build.log | head -40; tar czf $OUT/r.tgz -C $R .; exit 1; }
echo "build at $(el)s" >> $S
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 70 $TB --gtest_filter='OpsAttentionCuda.ExtendOut*:OpsCudaActivation.*:OpsAttentionCuda.ExtendEqualsCpuAcrossShapes:PiecewiseGraphsCuda.ReplayMatches*:PiecewiseGraphsCuda.VmmReplayMatchesEager:PiecewiseGraphRunnerCuda.*:ModelCuda.DecodeAfterExtendEqualsLongerExtend:OpsCudaPrepareQkv.*:-OpsCudaPrepareQkv.ManyTokens*' > $R/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ') at $(el)s" >> $S
grep -E '^\[ +(OK|FAILED) ' $R/tests.log | sed 's/^/  /' >> $S
P="prefill --model builtin:qwen3-0.6b --tokens 4,16,64,256,1024,4096 --iters 40"
P2="prefill --model builtin:qwen3-0.6b --tokens 1024,4096 --iters 40"
P4="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 40"
S6="GRAPHRT_EXTEND_OUT=copy GRAPHRT_EXTEND_ZERO=all GRAPHRT_SILU_KERNEL=cols"
cat > $R/abl.txt <<AB
new (direct, tail zero, silu rows)||$P
s6 (copy, zero all, silu cols)|$S6|$P
new again||$P
s6 again|$S6|$P
direct + zero all|GRAPHRT_EXTEND_ZERO=all|$P4
copy + tail zero|GRAPHRT_EXTEND_OUT=copy|$P4
new but silu cols|GRAPHRT_SILU_KERNEL=cols|$P2
new + prepare_qkv tile|GRAPHRT_PREPARE_QKV=tile|$P4
new + prepare_qkv auto|GRAPHRT_PREPARE_QKV=auto|$P
new + attention unpaired q tiles|GRAPHRT_EXTEND_PAIRING=0|$P4
new third|| $P4
llama new||prefill --model builtin:llama-3.1-8b --tokens 4096 --iters 20
llama s6|$S6|prefill --model builtin:llama-3.1-8b --tokens 4096 --iters 20
AB
OUT=$R ABLATIONS=$R/abl.txt BIN=$B ABLATION_TIMEOUT=40 timeout 170 bash scripts/gpu_ablations.sh > $R/ablations.txt 2>&1
echo "ablations at $(el)s" >> $S
python3 - $R/ablations >> $S <<'PY'
import json, os, sys
d = sys.argv[1]
for i in range(1, 20):
    if not os.path.exists(f"{d}/{i}.label"): break
    label = open(f"{d}/{i}.label").read().split("|")[0]
    try: j = json.load(open(f"{d}/{i}.json"))
    except Exception: print(label, "FAILED"); continue
    print(f"{label:28s}", " ".join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} |" for r in j["prefill"]))
PY
[ $(el) -lt 340 ] && { timeout 45 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $R/verify.json 2> $R/verify.err; echo "verify rc=$? at $(el)s" >> $S; grep "verified" $R/verify.err >> $S; python3 -c "import re,sys; d=[float(x) for x in re.findall(r'\"max_abs_diff\": *([-0-9.e+]+)', open(sys.argv[1]).read())]; print('max_abs_diff over', len(d), 'shapes:', max(d) if d else None)" $R/verify.json >> $S 2>&1; }
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1
N="prefill --model builtin:qwen3-0.6b --tokens 4096 --schedule-max-tokens 4096 --piecewise-cuda-graph-tokens 4096 --iters 3"
[ $(el) -lt 360 ] && { timeout 40 ncu --clock-control none --cache-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $R/ncu_step.csv $B bench $N > /dev/null 2> $R/ncu_step.err; python3 scripts/ncu_layer_table.py $R/ncu_step.csv --layers 28 > $R/layer_step.txt 2>&1; echo "ncu step at $(el)s" >> $S; }
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
for p in tile early lanes; do
  [ $(el) -gt 380 ] && break
  GRAPHRT_PREPARE_QKV=$p timeout 30 ncu --clock-control none --cache-control none --profile-from-start off -k regex:prepare_qkv --metrics $M --csv --log-file $R/pq_$p.csv $B bench $N > /dev/null 2> $R/pq_$p.err
done
python3 - "$R" >> $S <<'PY'
import csv, sys, glob, os, re
for f in sorted(glob.glob(sys.argv[1] + "/pq_*.csv")):
    lines = [l for l in open(f) if l.startswith('"')]
    m = {}
    for r in csv.DictReader(lines):
        k = re.search(r"prepare_qkv_\w+", r["Kernel Name"]).group(0)
        m.setdefault((k, r["Metric Name"], r["Metric Unit"]), []).append(float(r["Metric Value"].replace(",", "")))
    for (k, n, u), v in sorted(m.items()):
        print(f"{os.path.basename(f)} {k} {n} [{u}] n={len(v)} median={sorted(v)[len(v)//2]:.2f}")
PY
if [ $(el) -lt 380 ]; then
  timeout $((440 - $(el))) $TB --gtest_filter='OpsCudaPrepareQkv.ManyTokens*' > $R/tests_many.log 2>&1
  echo "many-token prepare_qkv test rc=$? $(grep -E '^\[ +(OK|FAILED) ' $R/tests_many.log | tr '\n' ' ') at $(el)s" >> $S
fi
echo "total $(el)s" >> $S
tar czf $OUT/r.tgz -C $R . 2>/dev/null
cat $R/layer_step.txt 2>/dev/null | cut -c1-120
cat $S
