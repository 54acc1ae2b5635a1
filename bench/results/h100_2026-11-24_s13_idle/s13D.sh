#!/usr/bin/env bash
# Session 13 call D: build; decode attention tests (the idle-exit bits test among them); A/B of
# GRAPHRT_DECODE_MMA_IDLE_EXIT (0/1) in fresh processes: qwen prefill 4/16/64 at the default schedule
# (context 4104: grids sized for 4104 tokens, short live lengths) and at schedule 64, decode bs 1/8/64
# ctx 1024, MoE bs 1, llama prefill 4/16; a trace of qwen prefill 16 (default schedule) with each.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/j" "$OUT/trace"
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 260 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>build.log 2>&1'
rc=$?
echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -20; tail -20 build.log; exit 1; }
BIN=build-gpu/graphrt
TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 100 "$TB" --gtest_filter='OpsAttentionCuda.Decode*:*SmallExtends*:DecodeGraphsCuda.*:PdlCuda.*' >"$OUT/tests.txt" 2>&1
echo "tests rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.txt" | tr '\n' ' ')"
grep -E "^\[  FAILED|changed bits" "$OUT/tests.txt" | head -20
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 30"
QS="prefill --model builtin:qwen3-0.6b --tokens 4,16 --schedule-max-tokens 64 --iters 30"
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8,64 --cuda-graph-bs 1,8,64 --iters 30"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
LP="prefill --model builtin:llama-3.1-8b --tokens 4,16 --iters 15"
bench() {  # name mode limit args...
  local name=$1 mode=$2 lim=$3; shift 3
  if [ "$(el)" -gt $((560 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  GRAPHRT_DECODE_MMA_IDLE_EXIT=$mode timeout "$lim" "$BIN" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err")"
}
for r in 1 2; do for m in 0 1; do bench "qp_m${m}_r$r" $m 50 $QP; done; done
echo "qwen prefill done at $(el) s"
for m in 0 1; do bench "qs_m${m}" $m 30 $QS; done
for r in 1 2; do for m in 0 1; do bench "qd_m${m}_r$r" $m 40 $QD; done; done
echo "qwen decode done at $(el) s"
for m in 0 1; do bench "lp_m${m}" $m 70 $LP; done
for m in 0 1; do bench "md_m${m}" $m 60 $MD; done
echo "llama, moe done at $(el) s"
for m in 0 1; do
  [ "$(el)" -gt 530 ] && break
  GRAPHRT_DECODE_MMA_IDLE_EXIT=$m timeout 30 $BIN bench prefill --model builtin:qwen3-0.6b --tokens 16 --iters 20 --trace $OUT/trace/rows16_m$m.json > $OUT/trace/rows16_m$m.txt 2>&1
  echo "== trace idle exit $m"; grep -E "^prefill|^head|^step" $OUT/trace/rows16_m$m.txt | cut -c1-200
  grep -A10 "^layer block" $OUT/trace/rows16_m$m.txt | grep -E "^\| [0-9]" | cut -c1-110
done
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
            rows.setdefault((kind, f"{r['tokens']}tok pw"), {}).setdefault(mode, []).append(r["piecewise_ms"])
print(f"{'bench':6s} {'point':10s} {'m0 (waiting)':>16s} {'m1 (idle exit)':>16s}")
for (k, p), v in rows.items():
    cell = lambda m: " ".join(x if isinstance(x, str) else f"{x:.3f}" for x in v.get(m, []))[:16]
    print(f"{k:6s} {p:10s} {cell('m0'):>16s} {cell('m1'):>16s}")
PY
gzip -f $OUT/trace/*.json 2>/dev/null; cd "$OUT" && tar czf runs.tgz j trace && rm -rf j trace
echo "end at $(el) s"
