#!/usr/bin/env bash
# Session 14 call B: build; the fused-prepare tests and the decode mma tests; verify qwen pool; A/B of
# GRAPHRT_DECODE_FUSE_PREPARE (0/1) interleaved in fresh processes; trace of qwen bs 1 fused.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/j" "$OUT/t"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 320 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -30; tail -20 build.log; cp build.log $OUT/; exit 1; }
B=build-gpu/graphrt
TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
echo skip tests
echo "tests rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.txt" | tr '\n' ' ')"
grep -E "FAILED|Failure|differ|did not|changed" "$OUT/tests.txt" | head -20
GRAPHRT_TMP_DECODE_ONLY=1 timeout 60 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify.err
echo "verify rc $? at $(el)s: $(grep -E 'verified' $OUT/verify.err | tr '\n' ' ' | cut -c1-220)"
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,2,8 --cuda-graph-bs 1,2,8 --iters 30"
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20"
LD="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
MD="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,4 --cuda-graph-bs 1,4 --iters 20"
bench() {  # name mode limit args...
  local name=$1 mode=$2 lim=$3; shift 3
  if [ "$(el)" -gt $((560 - lim)) ]; then echo "skip $name (at $(el) s)"; return; fi
  GRAPHRT_TMP_DECODE_ONLY=1 GRAPHRT_DECODE_FUSE_PREPARE=$mode timeout "$lim" "$B" bench "$@" --json >"$OUT/j/$name.json" 2>"$OUT/j/$name.err" ||
    echo "$name failed: $(tail -2 "$OUT/j/$name.err")"
}
for r in 1 2; do for m in 0 1; do bench "qd_m${m}_r$r" $m 40 $QD; done; done
for r in 1 2; do for m in 0 1; do bench "md_m${m}_r$r" $m 70 $MD; done; done
for r in 1 2; do for m in 0 1; do bench "ld_m${m}_r$r" $m 50 $LD; done; done
echo "A/B done at $(el) s"
[ "$(el)" -lt 530 ] && GRAPHRT_TMP_DECODE_ONLY=1 timeout 30 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $OUT/t/qd.json > $OUT/t/qd.txt 2>&1
python3 - "$OUT/j" <<'PY'
import json, os, sys
d = sys.argv[1]; rows = {}
for f in sorted(os.listdir(d)):
    if not f.endswith(".json"): continue
    try: j = json.load(open(f"{d}/{f}"))
    except Exception: print(f, "FAILED"); continue
    model, mode = f.split("_")[0], f.split("_")[1]
    for r in j.get("decode", []): rows.setdefault(f"{model} bs{r['bs']}", {}).setdefault(mode, []).append(r["graph_ms"])
    for r in j.get("prefill", []): rows.setdefault(f"{model} prefill {r['tokens']}", {}).setdefault(mode, []).append(r["graph_ms"])
print(f"{'point':20s} {'fuse 0':>16s} {'fuse 1':>16s}")
for p, v in rows.items():
    c = lambda m: " ".join(f"{x:.3f}" for x in v.get(m, []))
    print(f"{p:20s} {c('m0'):>16s} {c('m1'):>16s}")
PY
grep -A10 "^layer block" $OUT/t/qd.txt | grep -E "^\| [0-9]" | cut -c1-110
grep -E "^head|^step" $OUT/t/qd.txt | cut -c1-200
gzip -f $OUT/t/*.json 2>/dev/null
tar czf $OUT/j.tgz -C $OUT j && rm -rf $OUT/j; echo "total $(el)s"
