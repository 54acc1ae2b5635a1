#!/usr/bin/env bash
# One GPU job for the overlapped wgmma extend kernels (issue 18, session 5, fa3-ov / fa3-ov64):
# build, the extend attention and piecewise-graph CUDA tests, `inspect --verify-cuda-graph` (graph
# replay vs eager), `graphrt bench attention` old vs new kernels (PyTorch SDPA measured in the
# background while graphrt builds), `graphrt bench prefill` new auto vs auto-s4 in fresh
# processes. Prints the numbers as it goes (a timeout still leaves them in the output tail);
# logs go into $OUT/logs.tgz (few files come back from a device run).
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }
SHAPES=${SHAPES:-16/8/128,32/8/128,16/8/64}
TOKENS=${TOKENS:-64,256,1024,2048,4096,8192}
PREFIXES=${PREFIXES:-0,4096}
OLD_KERNELS=${OLD_KERNELS:-fa3-wg,fa3-wg2,fa2-v2q64}
NEW_KERNELS=${NEW_KERNELS:-auto,fa3-ov,fa3-ovq,fa3-ov64}
PYTHONUNBUFFERED=1 python3 scripts/bench_attention_torch.py --shapes "$SHAPES" --tokens "$TOKENS" \
  --prefixes "$PREFIXES" --out "$OUT/torch_attention.json" 2>/tmp/torch.log &
TORCH_PID=$!
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" >/tmp/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>/tmp/build.log 2>&1 ||
  { tail -30 /tmp/build.log; cp /tmp/build.log "$OUT/"; exit 1; }
B=build-gpu
echo "built $(el)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
# SASS of the bf16 head_dim 128 wgmma instances (template tail: OCC, GROUPS, STAGES, MODE), in the
# background: HGMMA count and the wgmma waits (DEPBAR.LE gsb0, 0x1 = wait_group 1: overlap).
if command -v cuobjdump >/dev/null; then
  (cuobjdump -sass $B/graphrt >/tmp/all.sass 2>/dev/null
   for pat in Li128ELi2ELi2ELi2ELi0E Li128ELi1ELi2ELi4ELi1E Li128ELi1ELi2ELi4ELi2E Li128ELi2ELi1ELi3ELi1E; do
     awk -v pat="$pat" '/Function :/ {keep = index($0, "extend_wgmma") && index($0, pat) && index($0, "bfloat16")} keep' \
       /tmp/all.sass >/tmp/sass_$pat.txt
     echo "sass $pat: lines $(wc -l </tmp/sass_$pat.txt) HGMMA $(grep -c HGMMA /tmp/sass_$pat.txt)" \
       "MUFU.EX2 $(grep -c MUFU.EX2 /tmp/sass_$pat.txt) BAR.SYNC $(grep -c BAR.SYNC /tmp/sass_$pat.txt) waits:" \
       "$(grep -o 'DEPBAR[^;]*' /tmp/sass_$pat.txt | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
   done >/tmp/sass_summary.txt) &
  SASS_PID=$!
fi
timeout 120 $B/tests/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Extend*:*Piecewise*' >/tmp/tests.log 2>&1
TRC=$?
echo "tests rc=$TRC $(el)"
grep -E "^\[  (FAILED|PASSED) |Failure|Expected|Which is|max_abs|Value of|case " /tmp/tests.log | head -24 | cut -c1-250
[[ -n "${SASS_PID:-}" ]] && { wait $SASS_PID; cat /tmp/sass_summary.txt; (cd /tmp && tar czf sass.tgz sass_*.txt); }
KERNELS=$OLD_KERNELS
[[ $TRC == 0 ]] && KERNELS="$NEW_KERNELS,$OLD_KERNELS"
wait $TORCH_PID
echo "torch rc=$? $(el)"; grep -v '^{' /tmp/torch.log | tail -2 | cut -c1-300
bench_attention() {  # $1: kernels, $2: json
  timeout 150 $B/graphrt bench attention --shapes "$SHAPES" --tokens "$TOKENS" --prefixes "$PREFIXES" --kernels "$1" \
    --iters "${ITERS:-10}" --torch "$OUT/torch_attention.json" --json-out "$2" >>/tmp/attention.txt 2>&1
  echo "bench rc=$? $(el)"
  python3 - "$2" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no attention json:", e); sys.exit(0)
ks = list(j["rows"][0]["kernels"].keys())
print("heads     pre   tok " + " ".join(f"{k.replace('fa3-', ''):>7.7s}" for k in ks) + "  ptbest  ptfa2   (TFLOP/s; then us of the first two)")
for r in j["rows"]:
    print(f"{r['nq']}/{r['nkv']}/{r['hd']:<4d} {r['prefix']:5d} {r['tokens']:5d} " +
          " ".join(f"{r['kernels'][k]['tflops']:7.1f}" for k in ks) +
          f"  {r.get('torch_best_tflops', 0):6.1f} {r.get('torch_flash_tflops', 0):6.1f}  " +
          " ".join(f"{r['kernels'][k]['ms']*1000:.1f}" for k in ks[:2]))
PY
}
bench_attention "$KERNELS" "$OUT/attention.json"
# New kernels that failed their tests: timed on their own (a fault must not lose the old numbers).
[[ $TRC != 0 ]] && bench_attention "$NEW_KERNELS" "$OUT/attention_failed_tests.json"
for tag in new old; do
  K=auto; [[ $tag == old ]] && K=auto-s4
  [[ $tag == new && $TRC != 0 ]] && { echo "skipping new prefill: tests failed"; continue; }
  GRAPHRT_EXTEND_KERNEL=$K timeout 90 $B/graphrt bench prefill --model builtin:qwen3-0.6b \
    --tokens "${PREFILL_TOKENS:-64,256,1024,4096}" --json >"$OUT/prefill_$tag.json" 2>/tmp/prefill_$tag.log
  echo "prefill $tag ($K) rc=$? $(el)"
  python3 - "$OUT/prefill_$tag.json" "$tag" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no prefill json:", e); sys.exit(0)
for r in j["prefill"]:
    print(f"{sys.argv[2]}: {r['tokens']:5d} tokens eager {r['eager_ms']:8.3f} ms piecewise {r['piecewise_ms']:8.3f} ms")
PY
done
if [[ $TRC == 0 ]]; then
  timeout 60 $B/graphrt inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json \
    >/tmp/verify.json 2>/tmp/verify.err
  echo "verify rc=$? $(el)"; grep -iE "differ|mismatch|eager" /tmp/verify.err | head -5 | cut -c1-250
fi
cp /tmp/sass.tgz /tmp/tests.log /tmp/attention.txt /tmp/build.log /tmp/verify.json /tmp/verify.err /tmp/prefill_*.log "$OUT/" 2>/dev/null
(cd "$OUT" && tar czf logs.tgz --ignore-failed-read sass.tgz tests.log attention.txt build.log verify.json verify.err prefill_*.log \
  2>/dev/null && rm -f sass.tgz tests.log attention.txt build.log verify.json verify.err prefill_*.log)
echo "done $(el)"
