#!/usr/bin/env bash
# One GPU job for the warp-specialised extend attention kernels (issue 18, session 6, fa3-ws,
# fa3-wsp, fa3-wsn, fa3-wsnp): build, the extend attention CUDA tests, SASS counts of the new
# kernels, `graphrt bench attention` old (fa3-wg2, fa3-ov) vs new kernels forced by
# GRAPHRT_EXTEND_KERNEL (PyTorch SDPA measured in the background while graphrt builds),
# `graphrt bench prefill` with auto vs the fastest new kernel at 16/8/128 4k forced, and
# `graphrt inspect --verify-cuda-graph` with that kernel forced. Every step has its own timeout
# (a deadlocked kernel must not take the rest of the job with it); numbers are printed as they
# come, logs go into $OUT/logs.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
T0=$(date +%s)
el() { echo "$(($(date +%s) - T0))s"; }
SHAPES=${SHAPES:-16/8/128,32/8/128,16/8/64}
TOKENS=${TOKENS:-512,1024,2048,4096,8192,16384}
PREFIXES=${PREFIXES:-0,4096}
OLD_KERNELS=${OLD_KERNELS:-fa3-wg2,fa3-ov}
NEW_KERNELS=${NEW_KERNELS:-fa3-ws,fa3-wsp,fa3-wsn,fa3-wsnp}
PYTHONUNBUFFERED=1 timeout 200 python3 scripts/bench_attention_torch.py --shapes "$SHAPES" --tokens "$TOKENS" \
  --prefixes "$PREFIXES" --out "$OUT/torch_attention.json" 2>/tmp/torch.log &
TORCH_PID=$!
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" >/tmp/build.log 2>&1 &&
  timeout 240 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>/tmp/build.log 2>&1 ||
  { tail -30 /tmp/build.log; cp /tmp/build.log "$OUT/"; exit 1; }
B=build-gpu
echo "built $(el)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
# SASS of the bf16 head_dim 128 ws instances (template tail: STAGES, PINGPONG, O128), in the
# background: HGMMA count, wgmma waits, mbarrier / named barrier instructions.
if command -v cuobjdump >/dev/null; then
  (cuobjdump -sass $B/graphrt >/tmp/all.sass 2>/dev/null
   for pat in Li4ELb0ELb0E Li4ELb1ELb0E Li4ELb0ELb1E Li4ELb1ELb1E; do
     awk -v pat="$pat" '/Function :/ {keep = index($0, "extend_wgmma_ws_kernel") && index($0, pat) && index($0, "bfloat16Li128")} keep' \
       /tmp/all.sass >/tmp/sass_$pat.txt
     echo "sass $pat: lines $(wc -l </tmp/sass_$pat.txt) HGMMA $(grep -c HGMMA /tmp/sass_$pat.txt)" \
       "HGMMA.64x128 $(grep -c 'HGMMA.64x128' /tmp/sass_$pat.txt) MUFU.EX2 $(grep -c MUFU.EX2 /tmp/sass_$pat.txt)" \
       "SETMAXREG $(grep -c SETMAXREG /tmp/sass_$pat.txt) BAR $(grep -cE 'BAR\.(SYNC|ARV)' /tmp/sass_$pat.txt)" \
       "SYNCS $(grep -c SYNCS /tmp/sass_$pat.txt) waits: $(grep -o 'DEPBAR[^;]*' /tmp/sass_$pat.txt | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
   done >/tmp/sass_summary.txt) &
  SASS_PID=$!
fi
timeout 100 $B/tests/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Extend*' >/tmp/tests.log 2>&1
TRC=$?
echo "tests rc=$TRC $(el)"
grep -E "^\[  (FAILED|PASSED) |^\[       OK|Failure|Expected|Which is|max_abs|Value of|case |fa3-ws" /tmp/tests.log | head -30 | cut -c1-250
[[ -n "${SASS_PID:-}" ]] && { wait $SASS_PID; cat /tmp/sass_summary.txt; (cd /tmp && tar czf sass.tgz sass_*.txt); }
wait $TORCH_PID
echo "torch rc=$? $(el)"; grep -v '^{' /tmp/torch.log | tail -2 | cut -c1-300
bench_attention() {  # $1: kernels, $2: json, $3: timeout
  timeout "$3" $B/graphrt bench attention --shapes "$SHAPES" --tokens "$TOKENS" --prefixes "$PREFIXES" --kernels "$1" \
    --iters "${ITERS:-10}" --torch "$OUT/torch_attention.json" --json-out "$2" >>/tmp/attention.txt 2>&1
  echo "bench $1 rc=$? $(el)"
}
if [[ $TRC == 0 ]]; then
  bench_attention "$NEW_KERNELS,$OLD_KERNELS" "$OUT/attention.json" 120
else  # a failing or hanging new kernel must not lose the others' numbers
  bench_attention "$OLD_KERNELS" "$OUT/attention.json" 60
  for k in ${NEW_KERNELS//,/ }; do bench_attention "$k" "$OUT/attention_$k.json" 30; done
fi
BEST=$(python3 - "$OUT" <<'PY'
import glob, json, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/attention*.json")):
    try:
        j = json.load(open(f))
    except Exception as e:
        print("no attention json", f, e, file=sys.stderr); continue
    for r in j["rows"]:
        key = (r["nq"], r["nkv"], r["hd"], r["prefix"], r["tokens"])
        rows.setdefault(key, {"torch": r.get("torch_best_tflops", 0)}).update(
            {k: v["tflops"] for k, v in r["kernels"].items()})
ks = []
for v in rows.values():
    ks += [k for k in v if k != "torch" and k not in ks]
print("heads     pre   tok " + " ".join(f"{k.replace('fa3-', ''):>7.7s}" for k in ks) + "  ptbest (TFLOP/s)", file=sys.stderr)
for key in sorted(rows):
    v = rows[key]
    print(f"{key[0]}/{key[1]}/{key[2]:<4d} {key[3]:5d} {key[4]:5d} " + " ".join(
        f"{v.get(k, 0):7.1f}" for k in ks) + f"  {v['torch']:6.1f}", file=sys.stderr)
at4k = rows.get((16, 8, 128, 0, 4096), {})
new = {k: at4k.get(k, 0) for k in ("fa3-ws", "fa3-wsp", "fa3-wsn", "fa3-wsnp") if at4k.get(k, 0) > 0}
print(max(new, key=new.get) if new else "fa3-ws")
PY
)
echo "best new at 16/8/128 4k: $BEST $(el)"
for K in auto "$BEST"; do
  [[ $K != auto && $TRC != 0 ]] && { echo "skipping prefill with $K: tests failed"; continue; }
  GRAPHRT_EXTEND_KERNEL=$K timeout 60 $B/graphrt bench prefill --model builtin:qwen3-0.6b \
    --tokens "${PREFILL_TOKENS:-1024,4096}" --iters 10 --json >"$OUT/prefill_$K.json" 2>/tmp/prefill_$K.log
  echo "prefill $K rc=$? $(el)"
  python3 - "$OUT/prefill_$K.json" "$K" <<'PY'
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
  GRAPHRT_EXTEND_KERNEL=$BEST timeout 60 $B/graphrt inspect --model builtin:qwen3-0.6b --device cuda \
    --verify-cuda-graph --json >/tmp/verify.json 2>/tmp/verify.err
  echo "verify ($BEST) rc=$? $(el)"; grep -iE "differ|mismatch|eager|equal" /tmp/verify.err | tail -4 | cut -c1-250
fi
cp /tmp/sass.tgz /tmp/tests.log /tmp/attention.txt /tmp/build.log /tmp/verify.json /tmp/verify.err /tmp/prefill_*.log \
  /tmp/torch.log "$OUT/" 2>/dev/null
(cd "$OUT" && tar czf logs.tgz --ignore-failed-read sass.tgz tests.log attention.txt build.log verify.json verify.err \
  prefill_*.log torch.log 2>/dev/null && rm -f sass.tgz tests.log attention.txt build.log verify.json verify.err prefill_*.log torch.log)
echo "done $(el)"
