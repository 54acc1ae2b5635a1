#!/usr/bin/env bash
# s6-pqkv, one device call: build, OpsCudaPrepareQkv.* under each kernel, prefill/decode A/B in
# fresh processes, ncu of one eager 4096-token prefill (all kernels under auto; the prepare_qkv
# launches only under lanes, early and auto).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
S=$OUT/summary.txt
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && timeout 250 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s" >> $S
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 90 $TB --gtest_filter='OpsCudaPrepareQkv.*' > $OUT/tests.log 2>&1  # every kernel in-process
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.log | tr '\n' ' ') at $(el)s" >> $S
P="prefill --model builtin:qwen3-0.6b --tokens 256,4096 --iters 10"
D="decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 20"
cat > $OUT/abl.txt <<AB
prefill lanes (old, default)||$P
prefill auto (tile >= 512, early below)|GRAPHRT_PREPARE_QKV=auto|$P
prefill early|GRAPHRT_PREPARE_QKV=early|$P
prefill tile|GRAPHRT_PREPARE_QKV=tile|$P
decode lanes (old, default)||$D
decode auto (early)|GRAPHRT_PREPARE_QKV=auto|$D
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 timeout $((290 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s" >> $S
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1
E="build-gpu/graphrt bench eager --model builtin:qwen3-0.6b --batch-sizes 1 --prefill-tokens 4096 --iters 4"
[ $(el) -lt 300 ] && GRAPHRT_PREPARE_QKV=auto timeout 45 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu.csv $E > /dev/null 2> $OUT/ncu.err
python3 scripts/ncu_breakdown.py $OUT/ncu.csv --layers 28 --top 8 > $OUT/ncu_pre4096.txt 2>&1
for p in lanes early auto; do
  [ $(el) -gt 330 ] && break
  GRAPHRT_PREPARE_QKV=$p timeout 40 ncu --clock-control none --profile-from-start off -k regex:prepare_qkv --metrics gpu__time_duration.sum,dram__bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread --csv --log-file $OUT/ncu_$p.csv $E > /dev/null 2> $OUT/ncu_$p.err
done
python3 - "$OUT" >> $S <<'PY'
import csv, sys, glob, os, re
for f in sorted(glob.glob(sys.argv[1] + "/ncu*.csv")):
    lines = [l for l in open(f) if l.startswith('"')]
    m = {}
    for r in csv.DictReader(lines):
        if "prepare_qkv" not in r["Kernel Name"]: continue
        k = re.search(r"prepare_qkv_\w+", r["Kernel Name"]).group(0)
        m.setdefault((k, r["Metric Name"], r["Metric Unit"]), []).append(float(r["Metric Value"].replace(",", "")))
    for (k, n, u), v in sorted(m.items()):
        print(f"{os.path.basename(f)} {k} {n} [{u}] n={len(v)} mean={sum(v)/len(v):.2f} min={min(v):.2f}")
PY
echo "ncu at $(el)s" >> $S
rm -f $OUT/ncu.csv
cat $OUT/ncu_pre4096.txt | head -14; cut -c1-48,108-300 $OUT/ablations.txt; cat $S
