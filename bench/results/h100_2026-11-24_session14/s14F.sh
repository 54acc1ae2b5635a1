#!/usr/bin/env bash
# Session 14 call F: build graphrt; qwen3-30b-a3b bs 1 MoE ablations under today's defaults, two rounds.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/j"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 320 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -30; exit 1; }
B=build-gpu/graphrt
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,2 --cuda-graph-bs 1,2 --iters 30"
LD="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
VARS=("base|" "resadd|GRAPHRT_MOE_RESIDUAL_ADD=1" "d1late|GRAPHRT_MOE_DOWN1_NORM=late" "d1early|GRAPHRT_MOE_DOWN1_NORM=1" "gubulk|GRAPHRT_MOE_GATE_UP1_COPY=bulk" "rpf1|GRAPHRT_MOE_ROUTER_PREFETCH=1" "rpfl2|GRAPHRT_MOE_ROUTER_PREFETCH=down-l2" "tfall|GRAPHRT_PDL_TRIGGER_FIRST=all")
bench() {  # name env limit args...
  local name=$1 envs=$2 lim=$3; shift 3
  if [ "$(el)" -gt $((575 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  env $envs timeout "$lim" "$B" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err" | cut -c1-200)"
}
for r in 1 2; do
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "md_${l}_r$r" "$e" 60 $MD; done
done
echo "done at $(el) s"
python3 - "$OUT/j" <<'PY'
import json, os, sys
d = sys.argv[1]; rows = {}; modes = []
for f in sorted(os.listdir(d)):
    if not f.endswith(".json"): continue
    try: j = json.load(open(f"{d}/{f}"))
    except Exception: print(f, "FAILED"); continue
    model, mode = f.split("_")[0], f.split("_")[1]
    if mode not in modes: modes.append(mode)
    for r in j.get("decode", []): rows.setdefault(f"{model} bs{r['bs']}", {}).setdefault(mode, []).append(r["graph_ms"])
print(f"{'point':12s} " + " ".join(f"{m:>14s}" for m in modes))
for p, v in rows.items():
    print(f"{p:12s} " + " ".join(f"{' '.join(f'{x:.3f}' for x in v.get(m, [])):>14s}" for m in modes))
PY
tar czf $OUT/j.tgz -C $OUT j && rm -rf $OUT/j; echo "total $(el)s"
