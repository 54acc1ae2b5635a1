#!/usr/bin/env bash
# Session 14 call G: build graphrt; GRAPHRT_GEMV_OCC=3 (one-tile GEMVs at <= 80 registers) against the
# default, and with the fused prepare on decode-only graphs (temporary switch), two rounds interleaved.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/j" "$OUT/t"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 320 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -30; exit 1; }
B=build-gpu/graphrt
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20"
LD="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
VARS=("a-base|" "b-occ3|GRAPHRT_GEMV_OCC=3" "c-occ3fused|GRAPHRT_GEMV_OCC=3 GRAPHRT_DECODE_FUSE_PREPARE=1 GRAPHRT_TMP_DECODE_ONLY=1")
bench() {  # name env limit args...
  local name=$1 envs=$2 lim=$3; shift 3
  if [ "$(el)" -gt $((560 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  env $envs timeout "$lim" "$B" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err" | cut -c1-200)"
}
for r in 1 2; do
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "qd_${l}_r$r" "$e" 40 $QD; done
  for v in "${VARS[@]:0:2}"; do l=${v%%|*}; e=${v#*|}; bench "qp_${l}_r$r" "$e" 40 $QP; done
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "md_${l}_r$r" "$e" 60 $MD; done
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "ld_${l}_r$r" "$e" 45 $LD; done
done
echo "done at $(el) s"
for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; [ "$(el)" -lt 540 ] && env $e timeout 30 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $OUT/t/qd_$l.json > $OUT/t/qd_$l.txt 2>&1; done
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
    for r in j.get("prefill", []): rows.setdefault(f"{model} pf{r['tokens']}", {}).setdefault(mode, []).append(r["graph_ms"])
modes = sorted(modes)
print(f"{'point':12s} " + " ".join(f"{m:>16s}" for m in modes))
for p, v in rows.items():
    print(f"{p:12s} " + " ".join(f"{' '.join(f'{x:.3f}' for x in v.get(m, [])):>16s}" for m in modes))
PY
for l in a-base b-occ3 c-occ3fused; do echo "== $l"; grep -A10 "^layer block" $OUT/t/qd_$l.txt | grep -E "^\| [0-9]" | cut -c1-100; done
gzip -f $OUT/t/*.json 2>/dev/null
tar czf $OUT/j.tgz -C $OUT j && rm -rf $OUT/j; echo "total $(el)s"
