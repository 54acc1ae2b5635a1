#!/usr/bin/env bash
# Session 13 call B: build, the norm variants' bits test, SASS conversion counts, A/B of
# GRAPHRT_GEMV_NORM_PACKED (one pass on) against the old prologue, ncu of the NORM GEMV at 8 / 12 rows.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/j" "$OUT/ncu"
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
OBJ=$(find build-gpu -name 'gemv.cu.o' | head -1)
cuobjdump -sass "$OBJ" > "$OUT/gemv.sass" 2>&1
python3 - "$OUT/gemv.sass" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
for part in s.split("Function : ")[1:]:
    name = part.split("\n")[0]
    if "gemv_kernel" not in name: continue
    m = re.search(r"gemv_kernelI(\w+?)Li(\d)ELb(\d)ELb(\d)E", name)
    print("sass", m.groups() if m else name[:60], "F2FP", part.count("F2FP"), "F2F.", part.count("F2F."), "PRMT", part.count("PRMT"), "HMMA", part.count("HMMA"), "instr", part.count(";"))
PY
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8,12,16 --cuda-graph-bs 1,8,12,16 --context 16 --iters 30"
Q1="decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 40"
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 30"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
bench() {  # name onepass packed limit args...
  local name=$1 op=$2 pk=$3 lim=$4; shift 4
  if [ "$(el)" -gt $((560 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  GRAPHRT_GEMV_NORM_ONE_PASS=$op GRAPHRT_GEMV_NORM_PACKED=$pk timeout "$lim" "$BIN" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err")"
}
for r in 1 2; do for v in "m00 0 0" "m10 1 0" "m11 1 1"; do set -- $v; bench "qd_$1_r$r" $2 $3 40 $QD; done; done
echo "qwen decode ctx16 done at $(el) s"
timeout 60 "$TB" --gtest_filter='*NormPrologueVariants*:*FusedLinear*:OpsCudaLinear.SmallM*' >"$OUT/tests.txt" 2>&1
echo "tests rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.txt" | tr '\n' ' ')"
grep -E "FAILED|differs" "$OUT/tests.txt" | head -20
for r in 1 2; do for v in "m00 0 0" "m10 1 0" "m11 1 1"; do set -- $v; bench "q1_$1_r$r" $2 $3 30 $Q1; done; done
for r in 1 2; do for v in "m00 0 0" "m10 1 0" "m11 1 1"; do set -- $v; bench "qp_$1_r$r" $2 $3 35 $QP; done; done
echo "qwen done at $(el) s"
for v in "m10 1 0" "m11 1 1"; do set -- $v; bench "md_$1" $2 $3 60 $MD; done
echo "moe done at $(el) s"
# ncu (isolated kernels, clocks left alone): the NORM GEMV at 8 rows (NT=1) and 12 rows (NT=2).
prof() {  # name rows packed
  if [ "$(el)" -gt 530 ]; then echo "skip ncu $1"; return; fi
  GRAPHRT_GEMV_NORM_PACKED=$3 timeout 45 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:gemv_kernel.*Lb1E" \
    --launch-skip 60 --launch-count 4 --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
    "$BIN" bench decode --model builtin:qwen3-0.6b --batch-sizes $2 --cuda-graph-bs $2 --context 16 --iters 2 >"$OUT/ncu/$1.txt" 2>&1
  echo "ncu $1 rc=$? at $(el) s"
}
prof r8 8 0; prof r12 12 0; prof r12p 12 1
for f in "$OUT"/ncu/*.txt; do
  echo "== $(basename $f)"; grep -E "Duration|Stall|Warp Cycles Per Issued|Issued Warp|Block Limit Reg|Achieved Occupancy|Registers Per|Grid Size" "$f" | sort | uniq -c | sort -rn | head -24
done > "$OUT/ncu_summary.txt"
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
print(f"{'bench':6s} {'point':8s} {'m00 (old)':>14s} {'m10 (one pass)':>15s} {'m11 (+packed)':>14s}")
for (k, p), v in rows.items():
    cell = lambda m: " ".join(x if isinstance(x, str) else f"{x:.3f}" for x in v.get(m, []))[:15]
    print(f"{k:6s} {p:8s} {cell('m00'):>14s} {cell('m10'):>15s} {cell('m11'):>14s}")
PY
cd "$OUT" && tar czf j.tgz j ncu && rm -rf j ncu
echo "end at $(el) s"
