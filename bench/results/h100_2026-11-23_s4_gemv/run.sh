#!/bin/bash
# The one H100 run of issue 18's small-batch decode work (s4-gemv): build, CUDA tests, then decode
# and prefill benchmarks with the new path and the old one (env switches, same binary), and
# ablations of each change on qwen3-0.6b. Everything is appended to $OUT as it comes (a cut-off
# run still returns what it did); the summary is printed last.
set -u
OUT=${OUT:?}
S=$OUT/summary.txt
TMP=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >"$S"
t0=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
  -DCMAKE_CUDA_ARCHITECTURES=90a-real >"$TMP/build.log" 2>&1 &&
  cmake --build build -j16 --target graphrt graphrt_cuda_tests >>"$TMP/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s" >>"$S"
if [ $rc -ne 0 ]; then grep -B2 -A8 "error" "$TMP/build.log" | head -60; cat "$S"; exit 1; fi
T=build/tests/graphrt_cuda_tests
timeout 100 $T --gtest_filter='OpsCuda*:OpsSamplingCuda*:PdlCuda*' >"$OUT/tests_ops.log" 2>&1
echo "ops tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests_ops.log" | tr '\n' ' ')" >>"$S"
grep -E '^\[  FAILED  \]' "$OUT/tests_ops.log" | head -20 >>"$S"
OLD="GRAPHRT_DECODE_FUSION=0 GRAPHRT_GEMV_EARLY_TRIGGER=0 GRAPHRT_ARGMAX_ONE_BLOCK=1"
bench() {  # name, env assignments ("-" for none), graphrt bench args...
  local name=$1 envs=$2; shift 2
  [ "$envs" = "-" ] && envs=""
  local t=$(date +%s)
  env $envs build/graphrt bench "$@" --json >"$TMP/$name.json" 2>"$TMP/$name.err"
  local rc=$?
  python3 - "$name" "$TMP/$name.json" "$OUT/bench.jsonl" "$rc" "$(( $(date +%s) - t ))" >>"$S" <<'PY'
import json, sys
name, path, jl, rc, secs = sys.argv[1:]
try:
    j = json.load(open(path))
except Exception as e:
    print(f"{name:12s} rc={rc} {secs}s no json ({e})"); sys.exit()
open(jl, "a").write(json.dumps({"name": name, "result": j}) + "\n")
for r in j.get("decode", []):
    print(f"{name:12s} bs {r['bs']:3d} graph {r['graph_ms']:7.3f} eager {r['eager_ms']:7.3f} roof {r['roofline_ms']:6.3f}")
for r in j.get("prefill", []):
    print(f"{name:12s} tok {r['tokens']:4d} eager {r['eager_ms']:7.3f} piecewise {r['piecewise_ms']:7.3f}")
print(f"{name:12s} rc={rc} {secs}s")
PY
}
Q="--model builtin:qwen3-0.6b"
L="--model builtin:llama-3.1-8b"
bench qwen_new - decode $Q --batch-sizes 1,8,64 --iters 20
bench qwen_old "$OLD" decode $Q --batch-sizes 1,8,64 --iters 20
bench prefill_new - prefill $Q --tokens 4,16 --schedule-max-tokens 64
bench prefill_old "$OLD" prefill $Q --tokens 4,16 --schedule-max-tokens 64
bench llama_new - decode $L --batch-sizes 1,64 --iters 20
bench llama_old "$OLD" decode $L --batch-sizes 1,64 --iters 20
timeout 120 $T --gtest_filter='DecodeGraphs*:ModelCuda*' >"$OUT/tests_model.log" 2>&1
echo "model tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests_model.log" | tr '\n' ' ')" >>"$S"
grep -E '^\[  FAILED  \]' "$OUT/tests_model.log" | head -20 >>"$S"
# Ablations (qwen3-0.6b): A argmax only, A+B norm/add fusion, A+B+C silu fusion (new = A+B+C+D).
bench q_A "GRAPHRT_DECODE_FUSION=0 GRAPHRT_GEMV_EARLY_TRIGGER=0" decode $Q --batch-sizes 1,8 --iters 20
bench q_AB "GRAPHRT_DECODE_FUSION=norm GRAPHRT_GEMV_EARLY_TRIGGER=0" decode $Q --batch-sizes 1,8 --iters 20
bench q_ABC "GRAPHRT_GEMV_EARLY_TRIGGER=0" decode $Q --batch-sizes 1,8 --iters 20
tar czf "$OUT/logs.tgz" -C "$TMP" . 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s" >>"$S"
cat "$S"
