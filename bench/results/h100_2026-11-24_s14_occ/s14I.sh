#!/usr/bin/env bash
# Session 14 call I: build; the GEMV occupancy test and the small-M linear tests; A/B of GRAPHRT_GEMV_OCC
# auto (new default) against 2 (the old kernel) on every preset, two rounds interleaved.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/j"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 320 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -30; exit 1; }
B=build-gpu/graphrt
TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 120 "$TB" --gtest_filter='*GemvOccupancy*:*NormPrologueVariants*:OpsCudaFusedLinear.*:OpsCudaLinear.SmallM*' >"$OUT/tests.txt" 2>&1
echo "tests rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.txt" | tr '\n' ' ')"
grep -E "FAILED|differs" "$OUT/tests.txt" | head -10
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$TB" --gtest_filter='*GemvOccupancy*' > $OUT/memcheck.log 2>&1
echo "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log | tail -1)"
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20"
LD="decode --model builtin:llama-3.1-8b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 20"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,4,8 --cuda-graph-bs 1,4,8 --iters 20"
VARS=("a-auto|" "b-occ2|GRAPHRT_GEMV_OCC=2")
bench() {  # name env limit args...
  local name=$1 envs=$2 lim=$3; shift 3
  if [ "$(el)" -gt $((560 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  env $envs timeout "$lim" "$B" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err" | cut -c1-200)"
}
for r in 1 2; do
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "md_${l}_r$r" "$e" 60 $MD; done
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "qd_${l}_r$r" "$e" 40 $QD; done
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "qp_${l}_r$r" "$e" 40 $QP; done
  for v in "${VARS[@]}"; do l=${v%%|*}; e=${v#*|}; bench "ld_${l}_r$r" "$e" 45 $LD; done
done
echo "done at $(el) s"
timeout 60 $B inspect --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --device cuda --verify-cuda-graph --graph-memory vmm --json > /dev/null 2> $OUT/verify_moe.err
echo "verify moe rc $? at $(el)s: $(grep -E 'verified' $OUT/verify_moe.err | tr '\n' ' ' | cut -c1-220)"
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
gzip -f $OUT/*.log 2>/dev/null
tar czf $OUT/j.tgz -C $OUT j && rm -rf $OUT/j; echo "total $(el)s"
