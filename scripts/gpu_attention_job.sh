#!/usr/bin/env bash
# One GPU job for extend attention (issue 18): the CUDA attention tests, `graphrt bench attention`
# beside PyTorch SDPA measured in the same job (scripts/bench_attention_torch.py), and, with
# PREFILL=1, `graphrt bench prefill` on builtin:qwen3-0.6b with the default extend kernel and with
# the old WMMA one (GRAPHRT_EXTEND_KERNEL=tc). Logs and JSON go to $OUT.
#   BIN: folder with graphrt and graphrt_cuda_tests (built here when missing), BIN/lib: extra
#   shared libraries carried with them.
#   PyTorch SDPA runs first, in the background while graphrt builds (its GPU timings do not need
#   the CPU cores the build takes; the small shapes' launch gaps may grow a little).
#   PREFILL_OLD: the GRAPHRT_EXTEND_KERNEL of the "old" prefill run (default auto-v1, the
#   session-3 choice; tc = the WMMA kernel before it).
#   WG_KERNELS (e.g. fa3-wg,fa3-wg2): the wgmma kernels, tested on their own and, where their
#   tests pass, timed in a bench of their own (attention_wg.json); WG_PREFILL: GRAPHRT_EXTEND_KERNEL
#   values for extra prefill runs once they passed. UNPAIRED_KERNELS: a bench with
#   GRAPHRT_EXTEND_PAIRING=0. TIME_LIMIT: seconds after which extra prefill runs are skipped.
#   At most 8 files come back from a device run: logs go into logs.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
SHAPES=${SHAPES:-16/8/128,32/8/128,16/8/64}
TOKENS=${TOKENS:-512,1024,2048,4096,8192,16384}
PREFIXES=${PREFIXES:-0,4096}
KERNELS=${KERNELS:-auto,auto-v1,auto-fa2,fa2-q64,fa2-q128w4,fa2-v2q64,fa2-v2,fa3-wg,fa3-wg2}
PYTHONUNBUFFERED=1 python3 scripts/bench_attention_torch.py --shapes "$SHAPES" --tokens "$TOKENS" \
  --prefixes "$PREFIXES" --out "$OUT/torch_attention.json" 2>/tmp/torch.log &
TORCH_PID=$!
BIN=${BIN:-}
if [[ -z "$BIN" || ! -x "$BIN/graphrt" ]]; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" >"$OUT/build.log" 2>&1 &&
    cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  BIN=build-gpu
  cp build-gpu/tests/graphrt_cuda_tests build-gpu/
fi
# Only graphrt's own processes see the carried libraries (python keeps its own).
LIBS="$PWD/$BIN/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
run() { LD_LIBRARY_PATH="$LIBS" "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader

if [[ -n "${SASS:-}" ]] && command -v cuobjdump >/dev/null; then
  # SASS of kernel instances, space-separated mangled template tails (e.g. Li128ELi4ELi2ELi2ELb1ELi3ELi0ELi0:
  # FA2 head_dim 128, 4 warps, MT 2, OCC 2, V2, 3 stages, BK default, EXPF 0; Li128ELi1: wgmma, OCC 1), bf16 only.
  cuobjdump -sass "$BIN/graphrt" >/tmp/all.sass 2>/dev/null
  for pat in $SASS; do
    f="$OUT/sass_$pat.txt"
    awk -v pat="$pat" '/Function :/ {keep = index($0, "extend_") && index($0, pat "EEEvNS") && index($0, "bfloat16")} keep' /tmp/all.sass >"$f"
    echo "sass $pat: lines $(wc -l <"$f") HMMA $(grep -c HMMA "$f") HGMMA $(grep -c HGMMA "$f") LDSM $(grep -c LDSM "$f") MUFU.EX2 $(grep -c MUFU.EX2 "$f") FMUL $(grep -c ' FMUL' "$f") BAR $(grep -c 'BAR.SYNC' "$f") LDGSTS $(grep -c LDGSTS "$f") LDL $(grep -c LDL "$f") STL $(grep -c STL "$f")"
  done
  (cd "$OUT" && tar czf sass.tgz sass_*.txt && rm -f sass_*.txt)
fi
echo "== tests ($SECONDS s)"
run "$BIN/graphrt_cuda_tests" --gtest_filter="${TESTS:-OpsAttentionCuda.*:-OpsAttentionCuda.ExtendWgmma*}" >"$OUT/tests.log" 2>&1
echo "tests rc=$?"
grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|max_abs|error" "$OUT/tests.log" | head -30
# The wgmma kernel alone (a fault there must not hide the FA2 results), then timed only if it passed.
WG_OK=0
if [[ -n "${WG_KERNELS:-}" ]]; then
  run timeout 60 "$BIN/graphrt_cuda_tests" --gtest_filter="OpsAttentionCuda.ExtendWgmma*" >"$OUT/tests_wgmma.log" 2>&1
  rc=$?
  echo "wgmma tests rc=$rc"
  grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|max_abs|error|case" "$OUT/tests_wgmma.log" | head -16 | cut -c1-250
  [[ $rc == 0 ]] && WG_OK=1
fi

echo "== torch sdpa (started before the build)"
wait $TORCH_PID
echo "torch rc=$?"; grep -v '^{' /tmp/torch.log | tail -3 | cut -c1-300

echo "== bench attention ($SECONDS s)"
run "$BIN/graphrt" bench attention --shapes "$SHAPES" --tokens "$TOKENS" --prefixes "$PREFIXES" --kernels "$KERNELS" \
  --iters "${ITERS:-10}" --torch "$OUT/torch_attention.json" --json-out "$OUT/attention.json" >"$OUT/attention.txt" 2>&1
echo "bench rc=$?"; tail -3 "$OUT/attention.txt" | cut -c1-200
if [[ $WG_OK == 1 ]]; then
  run timeout 60 "$BIN/graphrt" bench attention --shapes "$SHAPES" --tokens "$TOKENS" --prefixes "$PREFIXES" \
    --kernels "auto,$WG_KERNELS" --iters "${ITERS:-10}" --torch "$OUT/torch_attention.json" \
    --json-out "$OUT/attention_wg.json" >"$OUT/attention_wg.txt" 2>&1
  echo "wgmma bench rc=$?"
fi
if [[ -n "${UNPAIRED_KERNELS:-}" ]]; then
  # The same kernels with one q tile per block, heaviest first (GRAPHRT_EXTEND_PAIRING=0).
  GRAPHRT_EXTEND_PAIRING=0 run "$BIN/graphrt" bench attention --shapes "${UNPAIRED_SHAPES:-16/8/128,32/8/128}" \
    --tokens "${UNPAIRED_TOKENS:-2048,4096,8192}" --prefixes 0 --kernels "$UNPAIRED_KERNELS" --iters "${ITERS:-10}" \
    --json-out "$OUT/attention_unpaired.json" >"$OUT/attention_unpaired.txt" 2>&1
  echo "unpaired rc=$?"
fi

if [[ "${SANITIZE:-0}" == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer (memcheck, racecheck) on the FA2 tests"
  F=OpsAttentionCuda.ExtendFa2EqualsCpuAcrossGqaHeadDimsAndTiles:OpsAttentionCuda.ExtendEqualsCpuAcrossShapes
  for tool in memcheck racecheck; do
    LD_LIBRARY_PATH="$LIBS" timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 \
      "$BIN/graphrt_cuda_tests" --gtest_filter="$F" >/tmp/san_$tool.log 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' /tmp/san_$tool.log | tr '\n' ' ')"
    cat /tmp/san_$tool.log >>"$OUT/sanitizer.log"
  done
fi

if [[ "${PREFILL:-0}" == 1 ]]; then
  echo "== bench prefill (default extend kernel, then GRAPHRT_EXTEND_KERNEL=${PREFILL_OLD:-auto-v1})"
  run "$BIN/graphrt" bench prefill --model builtin:qwen3-0.6b --tokens "${PREFILL_TOKENS:-256,4096}" --json \
    >"$OUT/prefill_new.json" 2>/tmp/prefill_new.log
  echo "new rc=$?"
  GRAPHRT_EXTEND_KERNEL=${PREFILL_OLD:-auto-v1} run "$BIN/graphrt" bench prefill --model builtin:qwen3-0.6b \
    --tokens "${PREFILL_TOKENS:-256,4096}" --json >"$OUT/prefill_old.json" 2>/tmp/prefill_old.log
  echo "old rc=$?"
  [[ $WG_OK == 1 ]] && PREFILL_FORCE="${PREFILL_FORCE:-} ${WG_PREFILL:-}"
  for k in ${PREFILL_FORCE:-}; do
    if (( SECONDS > ${TIME_LIMIT:-400} )); then echo "skipping prefill $k: ${SECONDS}s"; continue; fi
    GRAPHRT_EXTEND_KERNEL=$k run timeout 60 "$BIN/graphrt" bench prefill --model builtin:qwen3-0.6b \
      --tokens "${PREFILL_TOKENS:-256,4096}" --json >"$OUT/prefill_$k.json" 2>/tmp/prefill_$k.log
    echo "$k rc=$?"
  done
  python3 - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
import glob, os
tags = ["new", "old"] + [os.path.basename(f)[8:-5] for f in sorted(glob.glob(f"{out}/prefill_fa*.json"))]
for tag in tags:
    try:
        j = json.load(open(f"{out}/prefill_{tag}.json"))
    except Exception as e:
        print(tag, "no json:", e); continue
    for r in j["prefill"]:
        print(f"{tag}: {r['tokens']:5d} tokens eager {r['eager_ms']:8.3f} ms piecewise {r['piecewise_ms']:8.3f} ms"
              f" torch eager {r.get('torch_eager_ms', 0):.3f} ms")
EOF
fi

# At most 8 files come back: logs and tables in one archive.
(cd "$OUT" && tar czf logs.tgz --ignore-failed-read build.log tests.log tests_wgmma.log attention.txt \
  attention_unpaired.txt attention_wg.txt sanitizer.log sass.tgz prefill_*.json 2>/dev/null
  rm -f build.log tests.log tests_wgmma.log attention.txt attention_unpaired.txt attention_wg.txt sanitizer.log sass.tgz \
    prefill_*.json)
for f in attention_unpaired attention_wg; do
  [[ -f "$OUT/$f.json" ]] || continue
  python3 - "$OUT/$f.json" "$f" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
for r in j["rows"]:
    print(f"{sys.argv[2][10:]} {r['nq']}/{r['nkv']}/{r['hd']} P{r['prefix']} T{r['tokens']}: " +
          " ".join(f"{k} {v['tflops']:.1f}" for k, v in r["kernels"].items()))
EOF
done
# Short summary last: TFLOP/s per kernel at every point (the whole table is attention.txt).
python3 - "$OUT/attention.json" <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no attention json:", e); sys.exit(0)
ks = list(j["rows"][0]["kernels"].keys())
print("heads     pre   tok " + " ".join(f"{k.replace('fa2-', ''):>6.6s}" for k in ks) + "  ptbest ptfa2")
for r in j["rows"]:
    print(f"{r['nq']}/{r['nkv']}/{r['hd']:<4d} {r['prefix']:5d} {r['tokens']:5d} " +
          " ".join(f"{r['kernels'][k]['tflops']:6.1f}" for k in ks) +
          f"  {r.get('torch_best_tflops', 0):6.1f} {r.get('torch_flash_tflops', 0):5.1f}")
EOF
