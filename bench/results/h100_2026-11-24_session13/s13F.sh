#!/usr/bin/env bash
# Session 13 call F: build; A/B of decode attention's early trigger (GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1:
# the o_proj GEMV launches at attention's start) and of GRAPHRT_PDL_TRIGGER_FIRST=all on the rows
# steps (short contexts) and on decode at ctx 16 / 1024; a trace of prefill 4/16 with early trigger.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/j" "$OUT/trace"
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 260 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?
echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -20; exit 1; }
B=build-gpu/graphrt
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 30"
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
QC="decode --model builtin:qwen3-0.6b --batch-sizes 1,16 --cuda-graph-bs 1,16 --context 16 --iters 30"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
run() {  # name env args
  local name=$1 envs=$2; shift 2
  [ "$(el)" -gt 520 ] && { echo "skip $name"; return; }
  env $envs timeout 45 $B bench "$@" --json > $OUT/j/$name.json 2>$OUT/j/$name.err || echo "$name failed: $(tail -1 $OUT/j/$name.err)"
}
for r in 1 2; do
  for v in "base GRAPHRT_DECODE_MMA_EARLY_TRIGGER=0" "et GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1" "all GRAPHRT_PDL_TRIGGER_FIRST=all"; do
    set -- $v
    run "qp_${1}_$r" "$2" $QP
    run "qd_${1}_$r" "$2" $QD
    run "qc_${1}_$r" "$2" $QC
  done
done
echo "A/B at $(el)s"
for v in "base GRAPHRT_DECODE_MMA_EARLY_TRIGGER=0" "et GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1"; do set -- $v; run "md_${1}_1" "$2" $MD; done
[ "$(el)" -lt 530 ] && GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1 timeout 40 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 --trace $OUT/trace/rows_et.json > $OUT/trace/rows_et.txt 2>&1
python3 - $OUT/j <<'PY'
import json, os, sys
d = sys.argv[1]; rows = {}
for f in sorted(os.listdir(d)):
    if not f.endswith(".json"): continue
    try: j = json.load(open(f"{d}/{f}"))
    except Exception: print(f, "FAILED"); continue
    kind, var = f.split("_")[0], f.split("_")[1]
    for r in j.get("decode", []): rows.setdefault(f"{kind} bs{r['bs']}", {}).setdefault(var, []).append(r["graph_ms"])
    for r in j.get("prefill", []): rows.setdefault(f"{kind} {r['tokens']}tok", {}).setdefault(var, []).append(r["graph_ms"])
print(f"{'point':14s} {'base':>14s} {'attn early trig':>16s} {'trigger first all':>18s}")
for p, v in rows.items():
    c = lambda m: " ".join(f"{x:.3f}" for x in v.get(m, []))
    print(f"{p:14s} {c('base'):>14s} {c('et'):>16s} {c('all'):>18s}")
PY
grep -E "^prefill|^head|^step" $OUT/trace/rows_et.txt | cut -c1-200 | head -6
grep -A10 "^layer block" $OUT/trace/rows_et.txt | grep -E "^\| [0-9]" | cut -c1-110 | head -14
gzip -f $OUT/trace/*.json 2>/dev/null; cd $OUT && tar czf runs.tgz j trace && rm -rf j trace
echo "total $(el)s"
