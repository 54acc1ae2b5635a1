#!/usr/bin/env bash
# The one device run of s8-moe (from the carried worktree copy's root): prebuilt binaries from
# pre.tar.gz (built off the device, sm_80 + sm_90a) when they load, else a build (sm_90a); the
# CUDA tests of the changed paths; decode A/B in fresh processes (scripts/gpu_ablations.sh):
# qwen3-30b-a3b bs 1,8, qwen3-0.6b bs 1,8, llama-3.1-8b bs 1, old (no L2 hints, no down prefetch)
# against new, interleaved, plus each change alone on qwen3-30b-a3b bs 1; then ncu of the changed
# kernels (cache not flushed, so a prefetch shows) old vs new, the stream probe under ncu (ncu's
# floor for 16/25 MB), and --verify-cuda-graph on qwen3-0.6b. Summary last; bulky files in all.tar.gz.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=$OUT/r; mkdir -p $R
S=$OUT/summary.txt
BUDGET=${BUDGET:-300}
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s8-moe/build/tests && ln -sfn "$PWD/tests" /work/wt/s8-moe/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s8-moe/build/graphrt
if [ -x $GR ] && $GR --help >/dev/null 2>$R/pre.err && $CT --gtest_list_tests >/dev/null 2>>$R/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $R/pre.err)); building" >>$S
  B=build-s8
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real >$R/build.log 2>&1 &&
    timeout 230 cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
    { grep -E "error" -A3 $R/build.log | head -40; tail -20 $R/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s8-moe/build/graphrt
fi
echo "ready at $(el)s" >>$S
F='OpsCudaL2Next.*:MoeFusedCuda.OneToken*:MoeFusedCuda.CapturedOneToken*:*MoeModelCuda*:OpsCudaFusedLinear.*:OpsCudaLinear.SmallM*:ModelCuda.*:DecodeGraphsCuda.ReplayMatchesEager*'
timeout 75 $CT --gtest_filter="$F" >$R/tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|one token|l2 next \]|Failure' $R/tests.log | head -24 >>$S
tar czf $OUT/all.tar.gz -C $OUT r
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --context 1024"
D="decode $M --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 20"
D1="decode $M --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
Q="decode --model builtin:qwen3-0.6b --device cuda --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
L="decode --model builtin:llama-3.1-8b --device cuda --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
OLD="GRAPHRT_L2_NEXT=0 GRAPHRT_MOE_DOWN_PREFETCH=0"
{
  for r in 1 2; do
    echo "moe new ($r)||$D"
    echo "moe old ($r)|$OLD|$D"
    echo "qwen new ($r)||$Q"
    echo "qwen old ($r)|$OLD|$Q"
    echo "llama new ($r)||$L"
    echo "llama old ($r)|$OLD|$L"
    echo "moe only qkv->o_proj ($r)|GRAPHRT_L2_NEXT=o_proj GRAPHRT_MOE_DOWN_PREFETCH=0|$D1"
    echo "moe only down1->next qkv ($r)|GRAPHRT_L2_NEXT=qkv GRAPHRT_MOE_DOWN_PREFETCH=0|$D1"
    echo "moe only gate_up1->down ($r)|GRAPHRT_L2_NEXT=0|$D1"
    echo "moe only gate_up1->down, no-allocate loads ($r)|GRAPHRT_L2_NEXT=0 GRAPHRT_MOE_GATE_UP1_LOAD=no-allocate|$D1"
    echo "moe new, no down prefetch ($r)|GRAPHRT_MOE_DOWN_PREFETCH=0|$D1"
  done
  echo "moe new (3)||$D1"
  echo "moe old (3)|$OLD|$D1"
} >$R/ab.txt
OUT=$R/ab BIN=$GR ABLATIONS=$R/ab.txt ABLATION_TIMEOUT=45 timeout 200 scripts/gpu_ablations.sh >$R/ab_table.txt 2>&1
echo "A/B done at $(el)s" >>$S
tar czf $OUT/all.tar.gz -C $OUT r
# ncu of the changed kernels in one eager bs-1 step (GRAPHRT_BENCH_PROFILE=1), caches NOT flushed
# between kernels (a prefetch into L2 then shows in the next kernel's DRAM bytes and time).
prof() {  # label env
  local label=$1 envs=$2
  # shellcheck disable=SC2086
  env GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 $envs timeout 45 ncu --clock-control none \
    --cache-control none --profile-from-start off -k 'regex:gemv_kernel|gate_up1|down1|decode_mma|router1' \
    --launch-skip 60 --launch-count 60 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct --csv --log-file $R/ncu_$label.csv \
    $GR bench $D1 >$R/ncu_$label.out 2>$R/ncu_$label.err
  echo "ncu $label rc=$? at $(el)s" >>$S
}
summ() {
  python3 - "$@" <<'PY' >>$S 2>&1
import csv, re, sys, statistics as st
SCALE = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}
for f in sys.argv[1:]:
    rows = {}
    try:
        lines = [l for l in open(f) if l.startswith('"')]
    except OSError as e:
        print(f, e); continue
    for r in csv.DictReader(lines):
        name = re.sub(r"\(anonymous namespace\)::|void |grt::cuda::|__nv_bfloat16", "", r["Kernel Name"])
        name = name.split("(")[0].replace("bfloat16", "bf16")[-40:]
        k = (name, r.get("Grid Size", ""))
        m = r["Metric Name"].split("__")[1].split(".")[0]
        try:
            v = float(r["Metric Value"].replace(",", "")) * SCALE.get(r["Metric Unit"], 1.0)
        except ValueError:
            continue
        rows.setdefault(k, {}).setdefault(m, []).append(v)
    print(f.split("/")[-1], "(medians: time us, dram MB read, L2 hit %)")
    for k, ms in sorted(rows.items()):
        print(f"  {k[0]:40s} {k[1]:14s} n={len(ms.get('time_duration', []))}",
              " ".join(f"{n}={st.median(v):.2f}" for n, v in ms.items()))
PY
}
[ "$(el)" -lt $((BUDGET - 70)) ] && prof new ""
[ "$(el)" -lt $((BUDGET - 45)) ] && prof old "$OLD"
summ $R/ncu_new.csv $R/ncu_old.csv
# ncu's floor for a stream of 16 MB read once (isolated, cache flushed as ncu's default).
if [ "$(el)" -lt $((BUDGET - 30)) ]; then
  timeout 25 ncu --clock-control none -k regex:ldg_kernel --launch-count 20 --metrics gpu__time_duration.sum --csv \
    --log-file $R/ncu_stream.csv $GR bench stream --bytes 16M --launches 1 --reps 1 >$R/ncu_stream.out 2>&1
  echo "ncu stream rc=$? at $(el)s" >>$S
  summ $R/ncu_stream.csv
fi
tar czf $OUT/all.tar.gz -C $OUT r
if [ "$(el)" -lt $((BUDGET - 20)) ]; then
  timeout 18 $GR inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --cuda-graph-bs 1,8 \
    --disable-piecewise-cuda-graph --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  echo "verify qwen3-0.6b rc $? at $(el)s: $(grep -o 'decode graphs: [^"]*' $R/verify.err | tail -1)" >>$S
fi
tar czf $OUT/all.tar.gz -C $OUT r
echo "total $(el)s" >>$S
cat $R/ab_table.txt
cat $S
