#!/usr/bin/env bash
# The one device run of s5-stream (from the carried worktree copy's root): prebuilt binaries from
# pre.tar.gz when they load there, else a build (sm_90a only); `graphrt bench stream`; the MoE CUDA
# tests; decode A/B of qwen3-30b-a3b bs 1 / 8 in fresh processes (scripts/gpu_ablations.sh):
# down1 by TMA bulk copies (GRAPHRT_MOE_DOWN1_COPY=bulk, the default) vs cp.async, and gate_up1 by
# TMA bulk copies too (GRAPHRT_MOE_GATE_UP1_COPY=bulk), three rounds; then while time allows ncu
# tables of one bs-1 graph step of each and --verify-cuda-graph with both bulk kernels. Writes
# $OUT/summary.txt and $OUT/all.tar.gz.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=$OUT/r; mkdir -p $R
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s5-stream/build/tests && ln -sfn "$PWD/tests" /work/wt/s5-stream/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s5-stream/build/graphrt
if [ -x $GR ] && $GR --help >/dev/null 2>$R/pre.err && $CT --gtest_list_tests >/dev/null 2>>$R/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $R/pre.err)); building" >>$S
  B=build-s5
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real >$R/build.log 2>&1 &&
    cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
    { grep -E "error" -A3 $R/build.log | head -40; tail -20 $R/build.log; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s5-stream/build/graphrt
fi
echo "ready at $(el)s" >>$S
timeout 60 $GR bench stream --bytes 4M,16M,25M,50M,64M,256M --json >$R/stream.json 2>$R/stream.err
echo "stream rc $? at $(el)s" >>$S
python3 - $R/stream.json >>$S 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"copy {j['copy_gbps']:.0f} GB/s; GB/s by config (rows) and MB (columns); xor ok: "
      f"{all(r['xor_ok'] for r in j['results'])}")
sizes = sorted({r['bytes'] for r in j['results']})
print(f"{'config':28s}" + "".join(f"{s/2**20:>9.0f}" for s in sizes))
rows = {}
for r in j['results']:
    k = f"{r['method']} d{r['depth']} b{r['blocks_per_sm']} {r['carveout']}"
    rows.setdefault(k, {})[r['bytes']] = r
for k, v in rows.items():
    print(f"{k:28s}" + "".join(f"{v[s]['gbps']:9.0f}" if s in v else " " * 9 for s in sizes))
print("us at 25M: " + ", ".join(f"{k} {v[25*2**20]['us']:.1f}" for k, v in rows.items() if 25*2**20 in v))
PY
timeout 75 $CT --gtest_filter='*Moe*' >$R/moe_tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/moe_tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|one token|fused \]' $R/moe_tests.log | head -20 >>$S
tar czf $OUT/all.tar.gz -C $OUT r
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93"
D="decode $M --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
D1="decode $M --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
{
  N="GRAPHRT_MOE_DOWN1_COPY=bulk GRAPHRT_MOE_GATE_UP1_COPY=loads"
  O="GRAPHRT_MOE_DOWN1_COPY=cp-async GRAPHRT_MOE_GATE_UP1_COPY=loads"
  B="GRAPHRT_MOE_DOWN1_COPY=bulk GRAPHRT_MOE_GATE_UP1_COPY=bulk"
  echo "down1 bulk, gate_up1 loads (new default)|$N|$D"
  echo "down1 cp.async, gate_up1 loads (old)|$O|$D"
  echo "down1 bulk, gate_up1 bulk|$B|$D"
  for r in 2 3; do
    echo "down1 bulk, gate_up1 loads ($r)|$N|$D1"
    echo "down1 cp.async, gate_up1 loads ($r)|$O|$D1"
    echo "down1 bulk, gate_up1 bulk ($r)|$B|$D1"
  done
} >$R/ab1.txt
OUT=$R/ab1 BIN=$GR ABLATIONS=$R/ab1.txt ABLATION_TIMEOUT=60 scripts/gpu_ablations.sh >>$S 2>&1
echo "A/B done at $(el)s" >>$S
tar czf $OUT/all.tar.gz -C $OUT r
prof() {  # label env
  local label=$1 envs=$2
  # shellcheck disable=SC2086
  env GRAPHRT_BENCH_PROFILE=1 $envs timeout 60 ncu --clock-control none --profile-from-start off \
    --metrics gpu__time_duration.sum --csv --log-file $R/ncu_$label.csv $GR bench $D1 >$R/ncu_$label.out 2>$R/ncu_$label.err
  echo "ncu $label rc=$? at $(el)s" >>$S
  python3 scripts/ncu_breakdown.py $R/ncu_$label.csv --layers 48 --top 8 >$R/ncu_$label.txt 2>&1
  head -14 $R/ncu_$label.txt >>$S
}
if [ "$(el)" -lt 110 ]; then prof bulk "GRAPHRT_MOE_DOWN1_COPY=bulk GRAPHRT_MOE_GATE_UP1_COPY=loads"; fi
tar czf $OUT/all.tar.gz -C $OUT r
if [ "$(el)" -lt 125 ]; then prof bothbulk "GRAPHRT_MOE_DOWN1_COPY=bulk GRAPHRT_MOE_GATE_UP1_COPY=bulk"; fi
tar czf $OUT/all.tar.gz -C $OUT r
if [ "$(el)" -lt 140 ]; then prof cpasync "GRAPHRT_MOE_DOWN1_COPY=cp-async GRAPHRT_MOE_GATE_UP1_COPY=loads"; fi
if [ "$(el)" -lt 155 ]; then
  GRAPHRT_MOE_DOWN1_COPY=bulk GRAPHRT_MOE_GATE_UP1_COPY=bulk timeout 30 $GR inspect $M --graph-memory pool --cuda-graph-bs 1,8 \
    --disable-piecewise-cuda-graph --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  echo "verify rc $? at $(el)s: $(grep -o 'decode graphs: [^"]*' $R/verify.err | tail -1)" >>$S
fi
tar czf $OUT/all.tar.gz -C $OUT r
echo "total $(el)s" >>$S
cat $S
