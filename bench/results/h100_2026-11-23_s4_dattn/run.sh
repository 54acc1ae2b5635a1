#!/usr/bin/env bash
# The one device run of s4-dattn (from the repository root): prebuilt binaries from pre/ when
# they load there, else a build (sm_90a only); the decode attention / prepare_qkv CUDA tests; the
# decode bench, fused (default) vs GRAPHRT_DECODE_ATTENTION=legacy; knob variants and ncu while
# time allows. Writes $OUT/summary.txt and $OUT/all.tar.gz.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
S=$OUT/summary.txt
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >$S
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s4-dattn/build && ln -sfn "$PWD/tests" /work/wt/s4-dattn/tests && ln -sf "$PWD/pre/graphrt" /work/wt/s4-dattn/build/graphrt
if [ -x $GR ] && $GR --help >/dev/null 2>$R/pre.err && $CT --gtest_list_tests >/dev/null 2>>$R/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $R/pre.err)); building" >>$S
  B=build-s4
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real >$R/build.log 2>&1 &&
    cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
    { grep -E "error" -A3 $R/build.log | head -40; tail -20 $R/build.log; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
fi
echo "ready at $(el)s" >>$S
$CT --gtest_filter='OpsAttentionCuda.Decode*:OpsCudaPrepareQkv*:DecodeGraphs*:ModelCuda*:OpsAttentionCuda.Store*' >$R/tests.log 2>&1
echo "tests rc $?: $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED' $R/tests.log | head -20 >>$S
bench() {  # name, env..., -- args
  local name=$1; shift
  env "$@" >$R/$name.json 2>$R/$name.err || echo "FAILED $name: $(tail -3 $R/$name.err)" >>$S
  tar czf $OUT/all.tar.gz -C $OUT r
}
Q="bench decode --model builtin:qwen3-0.6b --context 1024 --iters 20 --json"
L="bench decode --model builtin:llama-3.1-8b --context 1024 --iters 20 --json"
bench q_fused GRAPHRT_DECODE_ATTENTION=fused $GR $Q --batch-sizes 1,8,64,256
bench q_legacy GRAPHRT_DECODE_ATTENTION=legacy $GR $Q --batch-sizes 1,8,64,256
echo "qwen done at $(el)s" >>$S
bench l_fused GRAPHRT_DECODE_ATTENTION=fused $GR $L --batch-sizes 1,64
bench l_legacy GRAPHRT_DECODE_ATTENTION=legacy $GR $L --batch-sizes 1,64
bench l256_fused GRAPHRT_DECODE_ATTENTION=fused $GR $L --batch-sizes 256
bench l256_legacy GRAPHRT_DECODE_ATTENTION=legacy $GR $L --batch-sizes 256
echo "llama done at $(el)s" >>$S
if [ $(el) -lt 110 ]; then
  bench q_chunk128 GRAPHRT_DECODE_MIN_CHUNK=128 $GR $Q --batch-sizes 1,64
  bench q_bps4 GRAPHRT_DECODE_BLOCKS_PER_SM=4 $GR $Q --batch-sizes 1,64
  echo "variants done at $(el)s" >>$S
fi
ncu_run() {  # name, batch size, model args..., env
  local name=$1 bs=$2 v=$3; shift 3
  [ $(el) -lt 120 ] || return
  GRAPHRT_DECODE_ATTENTION=$v timeout 15 ncu --clock-control none --kernel-name regex:'decode_kernel|combine_kernel|prepare_qkv' \
    --launch-skip 90 --launch-count 6 --section SpeedOfLight $GR "$@" --batch-sizes $bs >$R/ncu_$name.txt 2>&1
  tar czf $OUT/all.tar.gz -C $OUT r
}
ncu_run q1_fused 1 fused $Q; ncu_run q1_legacy 1 legacy $Q
ncu_run q64_fused 64 fused $Q; ncu_run q64_legacy 64 legacy $Q
ncu_run l64_fused 64 fused $L; ncu_run l64_legacy 64 legacy $L
echo "ncu done at $(el)s" >>$S
python3 - $R >>$S <<'PY'
import json, sys, os
r = sys.argv[1]
def rows(n):
    try: d = json.load(open(os.path.join(r, n + ".json")))
    except Exception as e: return {}
    return {x["bs"]: x for x in d.get("decode", [])}
for m, names in (("qwen", ["q_fused", "q_legacy", "q_chunk128", "q_bps4"]), ("llama", ["l_fused", "l_legacy", "l256_fused", "l256_legacy"])):
    t = {n: rows(n) for n in names}
    for bs in sorted(set().union(*[set(v) for v in t.values()]) - {None}):
        print(m, "bs", bs, " ".join("%s=%.3f" % (n, t[n][bs].get("graph_ms", float("nan"))) for n in names if bs in t[n]),
              "roof=%.3f" % next((t[n][bs].get("roofline_ms", 0) for n in names if bs in t[n]), 0))
PY
grep -E "decode_kernel|combine_kernel|prepare_qkv|Duration|DRAM Throughput" $R/ncu_*.txt 2>/dev/null | sed 's/(grt::cuda::.*DecodeParams)//' | cut -c1-150 | head -80 >$R/ncu_summary.txt
echo "total $(el)s" >>$S
tar czf $OUT/all.tar.gz -C $OUT r
tar czf $OUT/all.tar.gz -C $OUT r
cut -c1-140 $R/ncu_summary.txt 2>/dev/null | head -60
cat $S
