#!/usr/bin/env bash
# Session 13 final, call 2 (warm machine, build-gpu from call 1): benches with the PyTorch anchors and the
# targets table; verify llama-3.1-8b and qwen3-30b-a3b; A/B of GRAPHRT_DECODE_MMA_PRELOAD=1 against auto
# (with idle exit); traces of the prefill rows steps.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
B=build-gpu/graphrt
[ -x $B ] || { echo "no build-gpu (cold machine)"; exit 3; }
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout 220 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
timeout 45 $B inspect --model builtin:llama-3.1-8b --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_llama_pool.err
echo "verify llama rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_llama_pool.err | tr '\n' ' ' | cut -c1-200)"
timeout 60 $B inspect --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_moe_pool.err
echo "verify moe rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_moe_pool.err | tr '\n' ' ' | cut -c1-200)"
mkdir -p $OUT/j $OUT/trace
QP="prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 30"
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
for r in 1 2; do for m in auto 1; do
  [ "$(el)" -gt 480 ] && break
  GRAPHRT_DECODE_MMA_PRELOAD=$m timeout 40 $B bench $QP --json > $OUT/j/qp_$m$r.json 2>/dev/null
  GRAPHRT_DECODE_MMA_PRELOAD=$m timeout 30 $B bench $QD --json > $OUT/j/qd_$m$r.json 2>/dev/null
done; done
echo "preload A/B at $(el)s"
python3 - $OUT/j <<'PY'
import json, os, sys
d = sys.argv[1]; rows = {}
for f in sorted(os.listdir(d)):
    try: j = json.load(open(f"{d}/{f}"))
    except Exception: print(f, "FAILED"); continue
    mode = f.split("_")[1][:-6]
    for r in j.get("decode", []): rows.setdefault(f"decode bs{r['bs']}", {}).setdefault(mode, []).append(r["graph_ms"])
    for r in j.get("prefill", []): rows.setdefault(f"prefill {r['tokens']}", {}).setdefault(mode, []).append(r["graph_ms"])
print(f"{'point':14s} {'preload auto':>16s} {'preload 1':>16s}")
for p, v in rows.items():
    c = lambda m: " ".join(f"{x:.3f}" for x in v.get(m, []))
    print(f"{p:14s} {c('auto'):>16s} {c('1'):>16s}")
PY
[ "$(el)" -lt 520 ] && timeout 40 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 --trace $OUT/trace/qwen_rows.json > $OUT/trace/qwen_rows.txt 2>&1
echo "trace at $(el)s"
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-220
grep -E "^prefill|^head|^step|^trace" $OUT/trace/qwen_rows.txt | cut -c1-200 | head -8
grep -A10 "^layer block" $OUT/trace/qwen_rows.txt | grep -E "^\| [0-9]" | cut -c1-110 | head -14
gzip -f $OUT/trace/*.json 2>/dev/null; tar czf $OUT/check.tgz -C $OUT check trace j && rm -rf $OUT/check $OUT/trace $OUT/j
echo "total $(el)s"
