#!/usr/bin/env bash
# Session 13 call A: build, the one-pass norm prologue's test, A/B of GRAPHRT_GEMV_NORM_ONE_PASS (0/1)
# interleaved in fresh processes: qwen decode bs 1/8/12/16 at ctx 16, bs 1 at the default ctx,
# prefill 4/16 (rows), MoE bs 1.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/j"
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
timeout 260 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>build.log 2>&1'
rc=$?
echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -20; tail -20 build.log; exit 1; }
BIN=build-gpu/graphrt
TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8,12,16 --cuda-graph-bs 1,8,12,16 --context 16 --iters 30"
Q1="decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 40"
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 30"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
bench() {  # name mode limit args...
  local name=$1 mode=$2 lim=$3; shift 3
  if [ "$(el)" -gt $((585 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  GRAPHRT_GEMV_NORM_ONE_PASS=$mode timeout "$lim" "$BIN" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err")"
}
for r in 1 2; do for m in 0 1; do bench "qd_m${m}_r$r" $m 40 $QD; done; done
echo "qwen decode ctx16 done at $(el) s"
timeout 60 "$TB" --gtest_filter='*NormOnePass*:*FusedLinear*:OpsCudaLinear.SmallM*' >"$OUT/tests.txt" 2>&1
echo "tests rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.txt" | tr '\n' ' ')"
grep -E "FAILED|differs" "$OUT/tests.txt" | head -20
for r in 1 2; do for m in 0 1; do bench "q1_m${m}_r$r" $m 30 $Q1; done; done
for r in 1 2; do for m in 0 1; do bench "qp_m${m}_r$r" $m 35 $QP; done; done
echo "qwen done at $(el) s"
for m in 0 1; do bench "md_m${m}" $m 70 $MD; done
python3 - "$OUT/j" <<'PY'
import json, os, sys
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
print(f"{'bench':6s} {'point':12s} {'m0 (row by row)':>18s} {'m1 (one pass)':>18s}")
for (k, p), v in rows.items():
    cell = lambda m: " ".join(x if isinstance(x, str) else f"{x:.3f}" for x in v.get(m, []))[:18]
    print(f"{k:6s} {p:12s} {cell('m0'):>18s} {cell('m1'):>18s}")
PY
echo "end at $(el) s"
