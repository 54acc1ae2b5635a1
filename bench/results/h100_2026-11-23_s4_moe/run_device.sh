#!/usr/bin/env bash
# The one device run of this folder (H100, issue 17 run 2 of session 4, helper s4-moe): binaries
# built off the device (CUDA 13.0, sm_80 + sm_90a) and carried in build/ (build/lib) with the shared text libs
# they need; MoE CUDA tests, decode new vs old in the same binary (GRAPHRT_MOE_FUSED=1 / 0 /
# router), prefill 4/64 tokens, --verify-cuda-graph of qwen3-30b-a3b, and ncu per-launch times of
# real eager bs-1 steps (fills filtered out by kernel name; see README). Run from the carried
# folder with OUT set.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
B=build
export LD_LIBRARY_PATH=$PWD/build/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
ldd $B/graphrt | grep "not found"
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
# The test binary names its data and the CLI by the path it was built at.
[ -e /work/wt/s4-moe ] || { mkdir -p /work/wt && ln -s "$PWD" /work/wt/s4-moe; }
timeout 45 $B/tests/graphrt_cuda_tests --gtest_filter='*Moe*' >"$OUT/moe_tests.log" 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/moe_tests.log" | tr '\n' ' ')"
grep -E "FAILED|fused \]" "$OUT/moe_tests.log" | head -12
for v in 1 0; do
  GRAPHRT_MOE_FUSED=$v timeout 35 $B/graphrt bench decode $M --batch-sizes 1,8,64 --iters 20 --json \
    >"$OUT/decode_fused$v.json" 2>>"$OUT/bench.err" || { echo "decode $v rc $?"; tail -3 "$OUT/bench.err"; }
  echo "decode fused=$v at $(el)s"
done
# If the fused router (a cluster + PDL launch) failed, the rest measures the experts fusion alone.
F=1
python3 -c "import json,sys; json.load(open(sys.argv[1]))['decode']" "$OUT/decode_fused1.json" 2>/dev/null || {
  F=experts; echo "fused=1 failed: measuring GRAPHRT_MOE_FUSED=experts instead"
  GRAPHRT_MOE_FUSED=experts timeout 40 $B/graphrt bench decode $M --batch-sizes 1,8,64 --iters 20 --json \
    >"$OUT/decode_fusedexperts.json" 2>>"$OUT/bench.err"; }
P="--tokens 4,64 --schedule-max-tokens 64 --iters 10 --json"
GRAPHRT_MOE_FUSED=$F timeout 25 $B/graphrt bench prefill $M $P >"$OUT/prefill_fused$F.json" 2>>"$OUT/bench.err" ||
  { echo "prefill rc $?"; tail -3 "$OUT/bench.err"; }
echo "prefill at $(el)s"
# Per-launch kernel times of real eager bs-1 steps. Filtered launches (fills excluded by name):
# 1 capture warm-up forward, then the bench's 3 + 1 eager steps, then graph replays; skipping
# 1000 and taking 1600 covers >= 2 whole eager steps for 490..650 kernels per step.
K='regex:gemv|gemm|norm|prepare|route|router|group|combine|decode|attention|copy|gather|scatter|argmax|sample|silu|rope|store|extend|xmma|nvjet|cutlass|sm90|logprob|penalty|min_p|flag|embed|moe'
NCU="ncu --clock-control none --kernel-name $K --launch-skip 1000 --launch-count 1600 --metrics gpu__time_duration.sum --csv"
GRAPHRT_MOE_FUSED=$F timeout 90 $NCU $B/graphrt bench decode $M --batch-sizes 1 --cuda-graph-bs 1 --iters 1 \
  >"$OUT/ncu_fused$F.csv" 2>"$OUT/ncu_fused$F.err"
echo "ncu fused=$F rc $? at $(el)s"
if [ "$(el)" -lt 150 ]; then
  timeout 30 $B/graphrt inspect $M --graph-memory pool --verify-cuda-graph --json >"$OUT/verify.json" 2>"$OUT/verify.err"
  echo "verify rc $? at $(el)s"
fi
if [ "$(el)" -lt 115 ]; then  # the old path's kernels, for the before/after table (>= 1 whole step)
  GRAPHRT_MOE_FUSED=0 timeout 75 ${NCU/--launch-count 1600/--launch-count 1400} $B/graphrt bench decode $M --batch-sizes 1 \
    --cuda-graph-bs 1 --iters 1 >"$OUT/ncu_fused0.csv" 2>"$OUT/ncu_fused0.err"
  echo "ncu fused=0 rc $? at $(el)s"
fi
if [ "$(el)" -lt 165 ] && [ "$F" = 1 ]; then
  GRAPHRT_MOE_FUSED=router timeout 25 $B/graphrt bench decode $M --batch-sizes 1,8 --iters 20 --json \
    >"$OUT/decode_fusedrouter.json" 2>>"$OUT/bench.err"
  echo "decode router-only at $(el)s"
fi
if [ "$(el)" -lt 175 ]; then
  GRAPHRT_MOE_FUSED=0 timeout 20 $B/graphrt bench prefill $M $P >"$OUT/prefill_fused0.json" 2>>"$OUT/bench.err"
  echo "prefill old at $(el)s"
fi
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
for f in sorted(glob.glob(out + "/decode_*.json")) + sorted(glob.glob(out + "/prefill_*.json")):
    try:
        j = json.load(open(f))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e); continue
    if "decode" in j:
        print(os.path.basename(f), [(r["bs"], round(r["eager_ms"], 3), round(r["graph_ms"], 3)) for r in j["decode"]])
    else:
        print(os.path.basename(f), [(r["tokens"], round(r["eager_ms"], 3), round(r["piecewise_ms"], 3)) for r in j["prefill"]])
try:
    v = json.load(open(out + "/verify.json"))
    rows = [s for k in ("decode", "piecewise") for s in v.get(k, {}).get("per_size", [])]
    bad = [s for s in rows if not s.get("verified")]
    print("verify:", len(rows) - len(bad), "/", len(rows), "max diff", max((s.get("max_abs_diff", 0) for s in rows), default=None))
except Exception as e:
    print("verify unreadable", e)
PY
# At most 8 files come back: everything in one archive.
(cd "$OUT" && tar czf results.tgz --remove-files -- *.json *.log *.err *.csv gpu.txt 2>/dev/null)
echo "total $(el)s"
