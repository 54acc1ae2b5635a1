#!/usr/bin/env bash
# (kept as run: copied to .gpuwork/gemv16/job.sh, run there as `OUT=$OUT bash job.sh`)
# gemv16 device job: build, A/B of GRAPHRT_GEMV_X_SMEM (0/1/2) interleaved in fresh processes, tests.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-out}
mkdir -p "$OUT/j"
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
timeout 250 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>build.log 2>&1'
rc=$?
grep -E "error|warning: .*gemv" build.log | head -20 >"$OUT/build_errors.txt"
echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { tail -40 build.log; exit 1; }
BIN=build-gpu/graphrt
TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8,12,16 --cuda-graph-bs 1,8,12,16 --context 16 --iters 30"
QP="prefill --model builtin:qwen3-0.6b --tokens 4,8,16 --iters 30"
LD="decode --model builtin:llama-3.1-8b --batch-sizes 1,8,12,16 --cuda-graph-bs 1,8,12,16 --context 16 --iters 20"
bench() {  # name mode limit args...
  local name=$1 mode=$2 lim=$3; shift 3
  if [ "$(el)" -gt $((392 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  GRAPHRT_GEMV_X_SMEM=$mode timeout "$lim" "$BIN" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err")"
}
for r in 1 2; do for m in 0 1 2; do bench "qd_m${m}_r$r" $m 30 $QD; done; done
echo "qwen decode done at $(el) s"
if [ "$(el)" -lt 300 ]; then
  timeout 80 "$TB" --gtest_filter='*XStaged*:OpsCudaLinear.*:*FusedLinear*:*Gemv*:*GateUp*' >"$OUT/tests.txt" 2>&1
  echo "tests rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.txt" | tr '\n' ' ')"
  grep -E "FAILED|differs" "$OUT/tests.txt" | head -20
fi
for r in 1 2; do for m in 0 1 2; do bench "qp_m${m}_r$r" $m 35 $QP; done; done
echo "qwen prefill done at $(el) s"
for m in 0 2; do bench "ld_m${m}" $m 40 $LD; done
echo "llama done at $(el) s"
if [ "$(el)" -lt 370 ]; then
  GRAPHRT_GEMV_X_SMEM=1 timeout 25 "$BIN" inspect --model builtin:qwen3-0.6b --verify-cuda-graph --json >"$OUT/inspect_m1.json" 2>"$OUT/inspect_m1.err"
  echo "inspect (mode 1) rc=$? at $(el) s"
  python3 -c "
import json,sys
j=json.load(open('$OUT/inspect_m1.json'))
def find(o,p=''):
    if isinstance(o,dict):
        for k,v in o.items():
            if 'verif' in k.lower() or 'max_diff' in k.lower() or 'mismatch' in k.lower(): print(p+k, json.dumps(v)[:300])
            else: find(v,p+k+'.')
find(j)" 2>&1 | head -12
fi
python3 - "$OUT/j" <<'PY'
import json, os, sys, statistics as st
d = sys.argv[1]
rows = {}
for f in sorted(os.listdir(d)):
    if not f.endswith(".json"): continue
    name = f[:-5]
    try: j = json.load(open(f"{d}/{f}"))
    except Exception: print(name, "FAILED"); continue
    kind, mode = name.split("_")[0], name.split("_")[1]
    if "decode" in j:
        for r in j["decode"]: rows.setdefault((kind, f"bs{r['bs']}"), {}).setdefault(mode, []).append(r["graph_ms"])
    else:
        for r in j.get("prefill", []):
            rows.setdefault((kind, f"{r['tokens']}tok"), {}).setdefault(mode, []).append(r["graph_ms"])
            rows.setdefault((kind, f"{r['tokens']}tok path"), {}).setdefault(mode, []).append(r.get("graph_path", "?"))
print(f"{'bench':6s} {'point':12s} {'m0':>16s} {'m1':>16s} {'m2':>16s}")
for (k, p), v in rows.items():
    cell = lambda m: " ".join(x if isinstance(x, str) else f"{x:.3f}" for x in v.get(m, []))[:16]
    print(f"{k:6s} {p:12s} {cell('m0'):>16s} {cell('m1'):>16s} {cell('m2'):>16s}")
PY
echo "end at $(el) s"
