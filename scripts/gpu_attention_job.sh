#!/usr/bin/env bash
# One GPU job for extend attention (issue 18): the CUDA attention tests, `graphrt bench attention`
# beside PyTorch SDPA measured in the same job (scripts/bench_attention_torch.py), and, with
# PREFILL=1, `graphrt bench prefill` on builtin:qwen3-0.6b with the default extend kernel and with
# the old WMMA one (GRAPHRT_EXTEND_KERNEL=tc). Logs and JSON go to $OUT.
#   BIN: folder with graphrt and graphrt_cuda_tests (built here when missing), BIN/lib: extra
#   shared libraries carried with them.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
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

SHAPES=${SHAPES:-16/8/128,32/8/128,16/8/64}
TOKENS=${TOKENS:-512,1024,2048,4096,8192,16384}
PREFIXES=${PREFIXES:-0,4096}
KERNELS=${KERNELS:-auto,fa2-q64,fa2-q128,fa2-q128w4,tc}

if [[ -n "${SASS:-}" ]] && command -v cuobjdump >/dev/null; then
  # SASS of one FA2 instance (e.g. SASS=Li128ELi4ELi1ELi2E: bf16? head_dim 128, 4 warps, MT 1, OCC 2).
  cuobjdump -sass "$BIN/graphrt" 2>/dev/null | awk -v pat="$SASS" '/Function :/ {keep = index($0, "extend_fa2") && index($0, pat) && index($0, "bfloat16")} keep' >"$OUT/sass.txt"
  echo "sass lines: $(wc -l <"$OUT/sass.txt"); HMMA $(grep -c HMMA "$OUT/sass.txt") LDSM $(grep -c LDSM "$OUT/sass.txt") MUFU $(grep -c MUFU "$OUT/sass.txt") BAR $(grep -c BAR "$OUT/sass.txt") LDL $(grep -c LDL "$OUT/sass.txt")"
fi
echo "== tests"
run "$BIN/graphrt_cuda_tests" --gtest_filter="${TESTS:-OpsAttentionCuda.*}" >"$OUT/tests.log" 2>&1
echo "tests rc=$?"
grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|max_abs|error" "$OUT/tests.log" | head -30

echo "== torch sdpa"
PYTHONUNBUFFERED=1 python3 scripts/bench_attention_torch.py --shapes "$SHAPES" --tokens "$TOKENS" \
  --prefixes "$PREFIXES" --out "$OUT/torch_attention.json" 2>/tmp/torch.log
echo "torch rc=$?"; grep -v '^{' /tmp/torch.log | tail -3 | cut -c1-300

echo "== bench attention"
run "$BIN/graphrt" bench attention --shapes "$SHAPES" --tokens "$TOKENS" --prefixes "$PREFIXES" --kernels "$KERNELS" \
  --torch "$OUT/torch_attention.json" --json-out "$OUT/attention.json" 2>&1 | tee "$OUT/attention.txt"

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
  echo "== bench prefill (default extend kernel, then the old tc kernel)"
  run "$BIN/graphrt" bench prefill --model builtin:qwen3-0.6b --tokens "${PREFILL_TOKENS:-256,4096}" --json \
    >"$OUT/prefill_new.json" 2>/tmp/prefill_new.log
  echo "new rc=$?"
  GRAPHRT_EXTEND_KERNEL=tc run "$BIN/graphrt" bench prefill --model builtin:qwen3-0.6b \
    --tokens "${PREFILL_TOKENS:-256,4096}" --json >"$OUT/prefill_old.json" 2>/tmp/prefill_old.log
  echo "old rc=$?"
  for k in ${PREFILL_FORCE:-}; do
    GRAPHRT_EXTEND_KERNEL=$k run "$BIN/graphrt" bench prefill --model builtin:qwen3-0.6b \
      --tokens "${PREFILL_TOKENS:-256,4096}" --json >"$OUT/prefill_$k.json" 2>/tmp/prefill_$k.log
    echo "$k rc=$?"
  done
  python3 - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
import glob, os
tags = ["new", "old"] + [os.path.basename(f)[8:-5] for f in sorted(glob.glob(f"{out}/prefill_fa2*.json"))]
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
